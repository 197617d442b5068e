#!/usr/bin/env bash
# The deploy/ files for real (docs/distributed.md §7, §8), on the Docker daemon of $DOCKER_HOST
# (.ci/run's private dockerd from .ci/docker-env.sh):
#
#   1. images: the league image (the root Dockerfile's `league` stage) and, because no registry
#      is reachable here, stand-ins for redis:7-bookworm and postgres:15-bookworm built from
#      Debian's packages (the same commands, entrypoint and environment as the official images
#      for what deploy/ uses);
#   2. Compose: main.compose.yml (Redis, PostgreSQL, coordinator, one worker) and
#      worker.compose.yml (a second project, as on a worker host, reaching the main host's
#      published ports); the coordinator's `distribute` must exit 0, with matches played by both
#      worker services;
#   2b. the ladder: ladder.compose.yml (site, worker, Redis, PostgreSQL, the worker driving this
#      daemon through its socket), a team and its token by `piranhas-ladder admin`, the shell bot
#      uploaded through the API, its check passed in the contest's container;
#   3. Swarm: a single-node `docker swarm init`, the secrets and config of stack.yml's header,
#      `docker stack deploy`, the coordinator's task must complete with matches on two worker
#      replicas; then the stack is removed, the swarm left, and the network namespaces Swarm
#      leaves mounted under the daemon's exec-root unmounted (or the exec-root cannot be removed).
#
# Run by .ci/run after the league Docker test (same daemon). Everything it makes is named
# piranhas-ci-* or lives in a temporary folder, and is removed at the end, also on failure.
set -euo pipefail
REPO="$(cd "$(dirname "$0")/.." && pwd)"
readonly REPO DOCKER=/usr/bin/docker COMPOSE=/usr/bin/docker-compose
: "${DOCKER_HOST:?run with the private daemon of .ci/docker-env.sh}"
: "${DOCKER_ENV_DIR:?the folder of the private daemon, whose exec-root is DOCKER_ENV_DIR/exec}"
export DOCKER_BUILDKIT=0

started=$SECONDS
log() { printf '[deploy-test %3ds] %s\n' "$((SECONDS - started))" "$*" >&2; }
die() { log "FAIL: $*"; exit 1; }

tmp="$(mktemp -d /tmp/piranhas-deploy-test.XXXXXX)"
swarm=false
cleanup() {
  local status=$?
  set +e
  if [[ -f $tmp/main/.env ]]; then
    if [[ $status != 0 ]]; then
      for project in main worker; do
        (cd "$tmp/$project" && "$COMPOSE" -p "piranhas-ci-$project" -f "$project.compose.yml" \
          logs --no-color --tail=40) >&2
      done
    fi
    (cd "$tmp/worker" && "$COMPOSE" -p piranhas-ci-worker -f worker.compose.yml down -v -t 20) \
      >/dev/null 2>&1
    (cd "$tmp/main" && "$COMPOSE" -p piranhas-ci-main -f main.compose.yml down -v -t 20) \
      >/dev/null 2>&1
  fi
  if [[ -f $tmp/ladder/.env ]]; then
    if [[ $status != 0 ]]; then
      (cd "$tmp/ladder" && "$COMPOSE" -p piranhas-ci-ladder -f ladder.compose.yml \
        logs --no-color --tail=60) >&2
    fi
    (cd "$tmp/ladder" && "$COMPOSE" -p piranhas-ci-ladder -f ladder.compose.yml down -v -t 20) \
      >/dev/null 2>&1
  fi
  # Bot and relay containers a killed ladder worker left on the daemon.
  "$DOCKER" ps -aq --filter label=piranhas.role | xargs -r "$DOCKER" rm -f >/dev/null 2>&1
  if [[ $swarm == true ]]; then
    if [[ $status != 0 ]]; then
      "$DOCKER" service logs --tail 40 piranhas_coordinator >&2
      "$DOCKER" service logs --tail 40 piranhas_worker >&2
    fi
    "$DOCKER" stack rm piranhas >/dev/null 2>&1
    for _ in $(seq 60); do
      [[ -z "$("$DOCKER" ps -q --filter label=com.docker.stack.namespace=piranhas)" ]] && break
      sleep 1
    done
    "$DOCKER" swarm leave --force >/dev/null 2>&1
  fi
  # Swarm's network namespaces (ingress, overlays) stay mounted under the exec-root.
  awk -v root="$DOCKER_ENV_DIR/exec" 'index($2, root) == 1 {print $2}' /proc/mounts \
    | sort -r | while read -r mount; do umount "$mount" 2>/dev/null || umount -l "$mount"; done
  remove_volumes >/dev/null 2>&1
  rm -rf "$tmp"
}
trap cleanup EXIT

# The daemon's data-root is cached between runs: a volume left by an earlier run (its removal
# can fail while the stack's containers are still going away) would hand PostgreSQL the data
# directory of that run, made with another run's password. Retried: a container that is just
# going away still holds its volume for a moment.
remove_volumes() {
  local volumes filter
  # Exited task containers of a stack outlive `stack rm` and `swarm leave` and hold its volumes.
  for filter in label=com.docker.stack.namespace=piranhas \
    label=com.docker.compose.project=piranhas-ci-main label=com.docker.compose.project=piranhas-ci-worker \
    label=com.docker.compose.project=piranhas-ci-ladder; do
    "$DOCKER" ps -aq --filter "$filter" | xargs -r "$DOCKER" rm -f >/dev/null 2>&1
  done
  for _ in $(seq 30); do
    volumes="$("$DOCKER" volume ls -q | grep '^piranhas' || true)"
    [[ -z $volumes ]] && return 0
    # shellcheck disable=SC2086
    "$DOCKER" volume rm $volumes >/dev/null 2>&1 || sleep 1
  done
  "$DOCKER" volume ls -q | grep '^piranhas' >&2 && return 1
  return 0
}
remove_volumes || die "volumes of an earlier run are still in use"

# --- 1. images ------------------------------------------------------------------------------------
mkdir -p "$tmp/ctx"
git -C "$REPO" ls-files -z --cached --others --exclude-standard \
  | tar -C "$REPO" --no-recursion --ignore-failed-read --null -cf - --files-from=- \
  | tar -C "$tmp/ctx" -xf -
python3 - "$REPO/pyproject.toml" >"$tmp/requirements.txt" <<'EOF'
import sys, tomllib
with open(sys.argv[1], "rb") as file:
    data = tomllib.load(file)
# The classic builder builds every stage before the target: the example bot's too.
names = [*data["project"]["dependencies"], *data["build-system"]["requires"]]
names += data["project"]["optional-dependencies"]["distributed"]
# redis needs it on Python < 3.11.3 (Debian has 3.11.2); pip download evaluates that marker
# with the host's Python.
names += ["async-timeout>=4.0.3"]
names += ["socha==4.3.9", "setuptools<81"]
print("\n".join(names))
EOF
python3 -m pip download --quiet --disable-pip-version-check --dest "$tmp/ctx/docker/wheels" \
  --only-binary=:all: --implementation cp --python-version 3.11 \
  --platform "manylinux_2_28_$(uname -m)" --platform "manylinux_2_17_$(uname -m)" \
  --platform "manylinux2014_$(uname -m)" -r "$tmp/requirements.txt" >"$tmp/pip.log" 2>&1 \
  || { tail -20 "$tmp/pip.log" >&2; die "could not download the wheels"; }
log "building piranhas-league:local (target league)"
"$DOCKER" build --quiet --target league -t piranhas-league:local "$tmp/ctx" >"$tmp/build.log" 2>&1 \
  || { tail -30 "$tmp/build.log" >&2; die "the league image did not build"; }

log "building the Redis and PostgreSQL stand-ins from Debian's packages"
"$DOCKER" build --quiet -t piranhas-ci-redis:local - >"$tmp/build-redis.log" 2>&1 <<'EOF' \
  || { tail -30 "$tmp/build-redis.log" >&2; die "the Redis stand-in did not build"; }
FROM debian:bookworm-slim
RUN apt-get update && apt-get install -y --no-install-recommends redis-server \
    && rm -rf /var/lib/apt/lists/* && install -d -o redis -g redis /data
WORKDIR /data
USER redis
CMD ["redis-server"]
EOF
"$DOCKER" build --quiet -t piranhas-ci-postgres:local - >"$tmp/build-postgres.log" 2>&1 <<'EOF' \
  || { tail -30 "$tmp/build-postgres.log" >&2; die "the PostgreSQL stand-in did not build"; }
FROM debian:bookworm-slim
RUN apt-get update && apt-get install -y --no-install-recommends postgresql \
    && rm -rf /var/lib/apt/lists/*
# The official image's interface as deploy/ uses it: POSTGRES_USER, POSTGRES_DB,
# POSTGRES_PASSWORD or POSTGRES_PASSWORD_FILE, the data in /var/lib/postgresql/data, password
# logins from the network, the server as PID 1.
RUN printf '%s\n' '#!/bin/sh' 'set -eu' \
    'bin=$(echo /usr/lib/postgresql/*/bin) data=/var/lib/postgresql/data' \
    'if [ -n "${POSTGRES_PASSWORD_FILE:-}" ]; then POSTGRES_PASSWORD=$(cat "$POSTGRES_PASSWORD_FILE"); fi' \
    'install -d -o postgres -g postgres -m 700 "$data" && install -d -o postgres -g postgres /var/run/postgresql' \
    'as() { setpriv --reuid=postgres --regid=postgres --init-groups "$@"; }' \
    'if [ ! -s "$data/PG_VERSION" ]; then' \
    '  printf "%s" "$POSTGRES_PASSWORD" >/tmp/pw && chown postgres /tmp/pw' \
    '  as "$bin/initdb" -D "$data" -U "$POSTGRES_USER" --pwfile=/tmp/pw --encoding=UTF8 --locale=C.UTF-8 --auth-local=trust --auth-host=scram-sha-256 >/dev/null' \
    '  rm /tmp/pw && echo "host all all all scram-sha-256" >>"$data/pg_hba.conf"' \
    '  as "$bin/pg_ctl" -D "$data" -o "-c listen_addresses=" -w start >/dev/null' \
    '  as "$bin/psql" -U "$POSTGRES_USER" -d postgres -qc "CREATE DATABASE \"$POSTGRES_DB\""' \
    '  as "$bin/pg_ctl" -D "$data" -m fast -w stop >/dev/null' \
    'fi' \
    'exec setpriv --reuid=postgres --regid=postgres --init-groups "$bin/postgres" -D "$data" -c listen_addresses="*"' \
    >/usr/local/bin/entrypoint && chmod 755 /usr/local/bin/entrypoint
ENTRYPOINT ["/usr/local/bin/entrypoint"]
EOF
export REDIS_IMAGE=piranhas-ci-redis:local POSTGRES_IMAGE=piranhas-ci-postgres:local

# A short league of the example bots (the deploy example's teams, 2 games a match: 12 games).
league() {
  sed -e 's/^games_per_match = 6/games_per_match = 2/' "$REPO/deploy/league.example.toml" >"$1"
}

# --- 2. Compose: a main host and a worker host ----------------------------------------------------
for role in main worker; do
  mkdir -p "$tmp/$role"
  cp "$REPO/deploy/$role.compose.yml" "$tmp/$role/"
  league "$tmp/$role/league.toml"
done
# The worker host reaches the main host's published ports on the daemon's bridge address.
# A daemon that has just created its bridge (a fresh machine: no docker0 before it started)
# reports the subnet but no Gateway in the bridge's IPAM config, so fall back to the address
# the bridge interface carries.
bridge_address() {
  local address iface
  address="$("$DOCKER" network inspect bridge --format '{{range .IPAM.Config}}{{.Gateway}}{{end}}')"
  if [ -z "$address" ]; then
    iface="$("$DOCKER" network inspect bridge --format '{{index .Options "com.docker.network.bridge.name"}}')"
    iface="${iface:-docker0}"
    address="$(ip -4 -o addr show dev "$iface" 2>/dev/null | awk '{ split($4, a, "/"); print a[1]; exit }')"
  fi
  [ -n "$address" ] || die "no address for the daemon's bridge: IPAM has no Gateway and ${iface:-docker0} no IPv4 address"
  printf '%s\n' "$address"
}
gateway="$(bridge_address)"
cat >"$tmp/main/.env" <<EOF
POSTGRES_PASSWORD=ci-postgres-$RANDOM
REDIS_PASSWORD=ci-redis-$RANDOM
PUBLISH_ADDRESS=$gateway
REDIS_IMAGE=$REDIS_IMAGE
POSTGRES_IMAGE=$POSTGRES_IMAGE
EOF
{ grep PASSWORD "$tmp/main/.env"; echo "MAIN_HOST=$gateway"; } >"$tmp/worker/.env"
log "compose: main host (Redis, PostgreSQL, coordinator, one worker) on $gateway"
(cd "$tmp/main" && "$COMPOSE" -p piranhas-ci-main -f main.compose.yml up -d --scale worker=1) \
  >"$tmp/up-main.log" 2>&1 || { cat "$tmp/up-main.log" >&2; die "main.compose.yml did not start"; }
log "compose: worker host (one worker)"
(cd "$tmp/worker" && "$COMPOSE" -p piranhas-ci-worker -f worker.compose.yml up -d) \
  >"$tmp/up-worker.log" 2>&1 || { cat "$tmp/up-worker.log" >&2; die "worker.compose.yml did not start"; }
coordinator="$(cd "$tmp/main" && "$COMPOSE" -p piranhas-ci-main -f main.compose.yml ps -q coordinator)"
# Not `docker wait`: it returns at the first exit, and the coordinator is restarted on failure
# (Redis may not answer yet when it starts first).
deadline=$((SECONDS + 600))
until [[ "$("$DOCKER" inspect -f '{{.State.Status}}' "$coordinator")" == exited ]]; do
  ((SECONDS < deadline)) || die "the league did not end in 10 min"
  sleep 2
done
status="$("$DOCKER" inspect -f '{{.State.ExitCode}}' "$coordinator")"
log "compose: the coordinator exited with $status after $("$DOCKER" inspect -f '{{.RestartCount}}' "$coordinator") restarts"
for project in main worker; do
  played="$(cd "$tmp/$project" && "$COMPOSE" -p "piranhas-ci-$project" -f "$project.compose.yml" \
    logs --no-color worker | grep -c 'ended: done' || true)"
  log "compose: the $project host's worker played $played matches"
  [[ $played -ge 1 ]] || die "the $project host's worker played no match"
done
"$DOCKER" logs "$coordinator" 2>&1 | tail -8 >&2
[[ $status == 0 ]] || die "the coordinator exited with $status"
log "compose: the league played to the end (coordinator exit 0)"
(cd "$tmp/worker" && "$COMPOSE" -p piranhas-ci-worker -f worker.compose.yml down -v -t 60) \
  >/dev/null 2>&1
(cd "$tmp/main" && "$COMPOSE" -p piranhas-ci-main -f main.compose.yml down -v -t 60) >/dev/null 2>&1
rm "$tmp/main/.env"

# --- 2b. the ladder: ladder.compose.yml, a team, an upload through the API, its check -----------
remove_volumes || die "the compose run's volumes are still in use"
log "ladder: building piranhas-ladder:local (deploy/ladder.Dockerfile)"
"$DOCKER" build --quiet -f "$tmp/ctx/deploy/ladder.Dockerfile" -t piranhas-ladder:local \
  "$tmp/ctx/deploy" >"$tmp/build-ladder.log" 2>&1 \
  || { tail -30 "$tmp/build-ladder.log" >&2; die "the ladder image did not build"; }
mkdir -p "$tmp/ladder"
cp "$REPO/deploy/ladder.compose.yml" "$tmp/ladder/"
# The workers' temporary directory, at the same path on the host and in the worker (the daemon
# mounts the games' sockets from it), owned by the image's user.
install -d -o 10003 -g 10003 -m 0700 "$tmp/ladder-run"
socket="${DOCKER_HOST#unix://}"
port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
cat >"$tmp/ladder/.env" <<EOF
POSTGRES_PASSWORD=ci-ladder-postgres-$RANDOM
REDIS_PASSWORD=ci-ladder-redis-$RANDOM
REDIS_IMAGE=$REDIS_IMAGE
POSTGRES_IMAGE=$POSTGRES_IMAGE
DOCKER_SOCKET=$socket
DOCKER_GID=$(stat -c %g "$socket")
LADDER_RUN_DIR=$tmp/ladder-run
LADDER_PORT=$port
EOF
ladder_compose() { (cd "$tmp/ladder" && "$COMPOSE" -p piranhas-ci-ladder -f ladder.compose.yml "$@"); }
log "ladder: compose up (site, worker, Redis, PostgreSQL), the site on 127.0.0.1:$port"
ladder_compose up -d >"$tmp/up-ladder.log" 2>&1 \
  || { cat "$tmp/up-ladder.log" >&2; die "ladder.compose.yml did not start"; }
site="http://127.0.0.1:$port"
deadline=$((SECONDS + 90))
until curl -sf "$site/api/standings" >/dev/null; do
  ((SECONDS < deadline)) || die "the ladder's site did not answer in 90 s"
  sleep 1
done
ladder_compose exec -T site piranhas-ladder admin create-team "CI Team" >&2
token="$(ladder_compose exec -T site piranhas-ladder admin token 1 | tr -d '\r')"
python3 - "$REPO/tests/check/bots/shell" "$tmp/bot.zip" <<'EOF'
import sys, zipfile
from pathlib import Path
with zipfile.ZipFile(sys.argv[2], "w") as archive:
    for name in ("start.sh", "bot.sh"):
        info = zipfile.ZipInfo(name)
        info.external_attr = (0o100755 if name == "start.sh" else 0o100644) << 16
        archive.writestr(info, (Path(sys.argv[1]) / name).read_bytes())
EOF
curl -sf -F bot=@"$tmp/bot.zip" -F label=ci -H "Authorization: Bearer $token" "$site/api/upload" \
  >"$tmp/upload.json" || die "the upload through the API failed"
log "ladder: uploaded with the team's token: $(cat "$tmp/upload.json")"
state() {
  curl -sf -H "Authorization: Bearer $token" "$site/api/versions" \
    | python3 -c 'import json, sys; print(json.load(sys.stdin)["versions"][0]["state"])'
}
deadline=$((SECONDS + 240))
while [[ "$(state)" == queued || "$(state)" == checking ]]; do
  ((SECONDS < deadline)) || die "the upload's check did not finish in 4 min (state $(state))"
  sleep 2
done
final="$(state)"
worker_log="$(ladder_compose logs --no-color worker 2>&1)"
grep -m1 'ready (queue piranhas-ladder\.' <<<"$worker_log" >&2 \
  || die "the worker did not take the ladder's own queue"
# The site and the worker create the schema at once on a new database: neither may fail.
if grep -q Traceback <<<"$worker_log"; then
  echo "$worker_log" >&2
  die "the worker crashed"
fi
curl -sf -H "Authorization: Bearer $token" "$site/api/versions" >&2
echo >&2
[[ $final == passed ]] || die "the upload's check ended $final, not passed"
# Not a silent fall-back to process mode: the card says where the bot ran.
isolation="$(ladder_compose exec -T site python3 -c \
  'import json; print(json.load(open("/ladder/data/cards/1.json"))["isolation"])' | tr -d '\r')"
log "ladder: the card's isolation: $isolation"
[[ $isolation == "Docker container"* ]] || die "the check did not run in a container"
log "ladder: the upload was checked by the worker in the contest's container: $final"
ladder_compose down -v -t 60 >/dev/null 2>&1
rm "$tmp/ladder/.env"

# --- 3. Swarm: stack.yml on a single-node swarm, the commands of its header -----------------------
remove_volumes || die "the compose run's volumes are still in use"
log "swarm: init, secrets, config, stack deploy"
"$DOCKER" swarm init --advertise-addr 127.0.0.1 >/dev/null
swarm=true
"$DOCKER" node update --label-add piranhas.main=true "$("$DOCKER" node ls -q)" >/dev/null
PW="ci-postgres-$RANDOM" RPW="ci-redis-$RANDOM"
printf 'postgresql://league:%s@postgres:5432/league\n' "$PW" | "$DOCKER" secret create piranhas_database - >/dev/null
printf 'redis://:%s@redis:6379/0\n' "$RPW" | "$DOCKER" secret create piranhas_redis_url - >/dev/null
printf '%s' "$PW" | "$DOCKER" secret create piranhas_postgres_password - >/dev/null
printf 'requirepass %s\nappendonly yes\nappendfsync always\n' "$RPW" | "$DOCKER" secret create piranhas_redis_conf - >/dev/null
league "$tmp/swarm-league.toml"
"$DOCKER" config create piranhas_league "$tmp/swarm-league.toml" >/dev/null
"$DOCKER" stack deploy --resolve-image never -c "$REPO/deploy/stack.yml" piranhas >"$tmp/stack.log" 2>&1 \
  || { cat "$tmp/stack.log" >&2; die "docker stack deploy failed"; }
deadline=$((SECONDS + 600))
until "$DOCKER" service ps piranhas_coordinator --format '{{.CurrentState}}' | grep -q '^Complete'; do
  if ((SECONDS > deadline)); then
    "$DOCKER" service ps --no-trunc piranhas_coordinator piranhas_worker >&2 || true
    "$DOCKER" service logs --tail 30 piranhas_coordinator >&2 || true
    die "the swarm league did not end in 10 min"
  fi
  sleep 2
done
"$DOCKER" service logs --no-task-ids piranhas_coordinator 2>&1 | tail -8 >&2
workers="$("$DOCKER" service logs piranhas_worker 2>&1 | grep 'ended: done' \
  | sed -E 's/^piranhas_worker\.([0-9]+)\..*/\1/' | sort -u | wc -l)"
log "swarm: matches played by $workers worker replicas"
[[ $workers -ge 2 ]] || die "the matches were not played by two worker replicas"
log "swarm: the league played to the end"
