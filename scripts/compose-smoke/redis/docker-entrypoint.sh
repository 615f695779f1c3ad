#!/bin/sh
# The official redis image's start: options alone (`--appendonly yes`) or a .conf file are
# given to redis-server; as root, /data is handed to the `redis` user, who then runs the server.
set -e

if [ "${1#-}" != "$1" ] || [ "${1%.conf}" != "$1" ]; then set -- redis-server "$@"; fi

if [ "$1" = redis-server ] && [ "$(id -u)" = 0 ]; then
  find . \! -user redis -exec chown redis '{}' +
  exec setpriv --reuid=redis --regid=redis --init-groups "$0" "$@"
fi

# The official image builds Redis with protected mode off: in a container, clients come from
# other addresses, and the published port is the operator's choice. Given first, so the command's
# own --protected-mode wins; a config file stays the first argument, as redis-server requires.
if [ "$1" = redis-server ]; then
  shift
  if [ $# -gt 0 ] && [ "${1#-}" = "$1" ]; then
    conf=$1
    shift
    set -- redis-server "$conf" --protected-mode no "$@"
  else
    set -- redis-server --protected-mode no "$@"
  fi
fi

exec "$@"
