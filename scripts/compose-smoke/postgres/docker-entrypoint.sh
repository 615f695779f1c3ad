#!/usr/bin/env bash
# The official postgres image's start, for Debian's PostgreSQL 15: on an empty PGDATA, initdb with
# POSTGRES_USER and POSTGRES_PASSWORD, then POSTGRES_DB and /docker-entrypoint-initdb.d/ on a
# temporary server that listens on its Unix socket only (so nothing connects over TCP before the
# initialisation is done), then the real server, listening on every address.
set -Eeuo pipefail

if [ "${1:0:1}" = '-' ]; then set -- postgres "$@"; fi

if [ "$1" = postgres ] && [ "$(id -u)" = 0 ]; then
  mkdir -p "$PGDATA"
  chown postgres:postgres "$PGDATA"
  chmod 700 "$PGDATA"
  exec setpriv --reuid=postgres --regid=postgres --init-groups "${BASH_SOURCE[0]}" "$@"
fi

psql_as_owner() { psql -v ON_ERROR_STOP=1 --no-psqlrc --username "$POSTGRES_USER" "$@"; }

if [ "$1" = postgres ] && [ ! -s "$PGDATA/PG_VERSION" ]; then
  POSTGRES_USER=${POSTGRES_USER:-postgres}
  POSTGRES_DB=${POSTGRES_DB:-$POSTGRES_USER}
  auth=${POSTGRES_HOST_AUTH_METHOD:-scram-sha-256}
  if [ -z "${POSTGRES_PASSWORD:-}" ] && [ "$auth" != trust ]; then
    echo 'Database is uninitialized and POSTGRES_PASSWORD is not set (or set POSTGRES_HOST_AUTH_METHOD=trust)' >&2
    exit 1
  fi
  # shellcheck disable=SC2086 # POSTGRES_INITDB_ARGS is a list of options, as in the official image
  initdb --username="$POSTGRES_USER" --pwfile=<(printf '%s\n' "${POSTGRES_PASSWORD:-}") \
    --encoding=UTF8 --locale=C.UTF-8 ${POSTGRES_INITDB_ARGS:-}
  printf '\nhost all all all %s\n' "$auth" >> "$PGDATA/pg_hba.conf"
  printf "\nlisten_addresses = '*'\n" >> "$PGDATA/postgresql.conf"

  pg_ctl -D "$PGDATA" -o "-c listen_addresses='' -p 5432" -w start
  if [ "$POSTGRES_DB" != postgres ]; then
    psql_as_owner --dbname postgres --set db="$POSTGRES_DB" <<<'CREATE DATABASE :"db";'
  fi
  for file in /docker-entrypoint-initdb.d/*; do
    case "$file" in
      *.sh) echo "running $file"; . "$file" ;;
      *.sql) echo "running $file"; psql_as_owner --dbname "$POSTGRES_DB" -f "$file" ;;
      *.sql.gz) echo "running $file"; gunzip -c "$file" | psql_as_owner --dbname "$POSTGRES_DB" ;;
      *) [ -e "$file" ] && echo "ignoring $file" ;;
    esac
  done
  pg_ctl -D "$PGDATA" -m fast -w stop
  echo 'PostgreSQL init process complete; ready for start up.'
fi

exec "$@"
