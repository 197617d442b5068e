#!/usr/bin/env bash
# Docker smoke test: build the image, run docker-compose.yml (server + two socha bots) and check
# that a real game ends with a replay and a results line on the host's bind mount.
#
# Runs as root, without stdin, on a clean checkout. It installs what it lacks from Debian,
# starts a private Docker daemon (own socket, exec-root and temp dirs; stopped by its PID on
# exit), and builds the base image debian:bookworm-slim itself with debootstrap, because no
# container registry is reachable here; the Dockerfile is the one used anywhere else. The
# daemon and the base image come from .ci/docker-env.sh (shared with the league Docker test).
#
# Caches under $SMOKE_CACHE (default /var/cache/piranhas-docker-smoke): the rootfs tarball,
# the wheelhouse and the daemon's data-root (image layers), so reruns take seconds.
# SMOKE_FRESH=1 uses a throw-away data-root (cold build, cached rootfs and wheels).
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
readonly REPO
readonly CACHE="${SMOKE_CACHE:-/var/cache/piranhas-docker-smoke}"
readonly GAME_TIMEOUT="${SMOKE_GAME_TIMEOUT:-180}"
readonly PROJECT=piranhas-smoke
readonly SERVER_IMAGE=piranhas-server:local
readonly BOT_IMAGE=piranhas-bot:local
readonly SERVER_UID=10001
# Debian's client matches Debian's daemon (20.10) and its classic builder; a newer docker CLI
# earlier on PATH would insist on buildx.
readonly DOCKER=/usr/bin/docker
readonly COMPOSE=/usr/bin/docker-compose

started=$SECONDS
# Its log lines count from the same start. (Not as a prefix of `source`: bash would drop the
# assignment again when `source` returns, and its functions need it later.)
docker_env_started=$started
# shellcheck source=.ci/docker-env.sh
source "$REPO/.ci/docker-env.sh"
log() { printf '[docker-smoke %3ds] %s\n' "$((SECONDS - started))" "$*"; }
die() { log "FAIL: $*" >&2; exit 1; }

[[ $(id -u) -eq 0 ]] || die "must run as root (it starts a Docker daemon)"

tmp=""
daemon_started=false
compose_up=false

dump_diagnostics() {
  [[ $compose_up == true ]] || return 0
  log "diagnostics: container states and logs"
  compose ps || true
  compose logs --no-color --tail=40 || true
}

cleanup() {
  local status=$?
  set +e
  if [[ $status -ne 0 ]]; then
    dump_diagnostics
  fi
  if [[ $compose_up == true ]]; then
    compose down --volumes --remove-orphans --timeout 20 >/dev/null 2>&1 \
      || log "compose down failed"
  fi
  if [[ $daemon_started == true ]]; then
    docker_env_stop "$tmp/daemon"
  fi
  if [[ -n $tmp ]]; then
    # The exec-root may hold mounts only if dockerd died hard; never delete through them.
    if ! grep -q " $tmp/" /proc/self/mounts; then
      rm -rf "$tmp"
    else
      log "left $tmp in place: something is still mounted below it"
    fi
  fi
  if [[ $status -eq 0 ]]; then
    log "PASS in $((SECONDS - started)) s"
  else
    log "FAILED (exit $status) after $((SECONDS - started)) s" >&2
  fi
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

docker() { "$DOCKER" "$@"; }
compose() { "$COMPOSE" --project-name "$PROJECT" --project-directory "$tmp/ctx" \
  --file "$tmp/ctx/docker-compose.yml" "$@"; }

# --- 1. tools from Debian ---------------------------------------------------------------------
docker_env_install compose

mkdir -p "$CACHE"
# One smoke test at a time per machine: they share the cache and the data-root.
exec 9>"$CACHE/lock"
flock --wait 900 9 || die "another docker smoke test holds $CACHE/lock"

tmp="$(mktemp -d /tmp/piranhas-docker-smoke.XXXXXX)"

# --- 2. a private Docker daemon, 3. the base image, built locally ------------------------------
daemon_started=true
docker_env_start "$tmp/daemon"

# --- 4. build context and wheelhouse ----------------------------------------------------------
# The checkout as git sees it (tracked and new files, not ignored ones), copied, so the smoke
# test neither writes into the checkout nor depends on files that are not committed-to-be.
mkdir -p "$tmp/ctx"
git -C "$REPO" ls-files -z --cached --others --exclude-standard \
  | tar -C "$REPO" --no-recursion --ignore-failed-read --null -cf - --files-from=- \
  | tar -C "$tmp/ctx" -xf - \
  || die "could not copy the checkout into the build context"

# Containers here cannot verify PyPI's certificate (an intercepting proxy), so the image gets
# its Python packages as wheels from the host: the wheelhouse the Dockerfile prefers.
requirements="$(python3 - "$REPO/pyproject.toml" <<'EOF'
import sys, tomllib
with open(sys.argv[1], "rb") as file:
    data = tomllib.load(file)
# Runtime dependencies, the build backend (pip builds the project offline in the image), and
# the example bot's packages (pinned in the Dockerfile).
names = [*data["project"]["dependencies"], *data["build-system"]["requires"]]
names += ["socha==4.3.9", "setuptools<81"]
# The classic builder builds every stage before its target: the server's build passes the
# league stage, which adds the distributed extra.
names += data["project"]["optional-dependencies"]["distributed"]
# redis needs it on Python < 3.11.3 (Debian has 3.11.2); pip download evaluates that marker
# with the host's Python.
names += ["async-timeout>=4.0.3"]
print("\n".join(names))
EOF
)"
mkdir -p "$CACHE/wheels"
printf '%s\n' "$requirements" >"$tmp/requirements.txt"
log "wheelhouse: $(tr '\n' ' ' <"$tmp/requirements.txt")"
# Wheels for the image's Python (Debian bookworm: CPython 3.11), whatever Python the host has.
# Only this run's resolution goes into the context (so the image layer stays cached); files
# already in the cache are copied from there, the rest downloaded and cached.
arch="$(uname -m)"
python3 -m pip download --quiet --disable-pip-version-check --dest "$tmp/ctx/docker/wheels" \
  --find-links "$CACHE/wheels" --only-binary=:all: --implementation cp --python-version 3.11 \
  --platform "manylinux_2_28_$arch" --platform "manylinux_2_17_$arch" \
  --platform "manylinux2014_$arch" -r "$tmp/requirements.txt" >"$tmp/pip.log" 2>&1 \
  || { tail -20 "$tmp/pip.log" >&2; die "could not download the wheels"; }
cp -n "$tmp"/ctx/docker/wheels/*.whl "$CACHE/wheels/"

# --- 5. images ---------------------------------------------------------------------------------
export DOCKER_BUILDKIT=0
for target in server bot; do
  image=$SERVER_IMAGE
  [[ $target == bot ]] && image=$BOT_IMAGE
  log "building $image (target $target)"
  timeout 900 "$DOCKER" build --quiet --target "$target" --tag "$image" "$tmp/ctx" \
    >"$tmp/build-$target.log" 2>&1 \
    || { tail -40 "$tmp/build-$target.log" >&2; die "docker build --target $target failed"; }
done

# The image's entrypoint writes the admin password into a properties file; the server's
# parser must read back exactly that password, whatever characters it has.
docker run --rm --entrypoint python "$SERVER_IMAGE" -c '
import importlib.util, sys
from server.config import parse_properties
spec = importlib.util.spec_from_file_location("entrypoint", "/usr/local/lib/piranhas/entrypoint.py")
entrypoint = importlib.util.module_from_spec(spec)
spec.loader.exec_module(entrypoint)
for password in ["plain", "  lead", "back\\slash", "a=b:c #!", "tab\tnl\ncr\r", "ümlaut ß €", "end "]:
    text = "local = false\npassword = " + entrypoint.escape_property_value(password) + "\n"
    got = [p.value for p in parse_properties(text) if p.key == "password"]
    if got != [password]:
        sys.exit(f"password {password!r} came back as {got!r}")
' || die "the entrypoint's password file does not round-trip through the server's parser"

# --- 6. the league ----------------------------------------------------------------------------
data="$tmp/ctx/docker/data"
export PIRANHAS_DATA="$data" PIRANHAS_PUBLISH="127.0.0.1:"
compose_up=true
# Containers of an earlier run that was killed hard would otherwise be reused.
compose down --volumes --remove-orphans >/dev/null 2>&1 || true
log "docker-compose up (server + two bots)"
timeout 300 "$COMPOSE" --project-name "$PROJECT" --project-directory "$tmp/ctx" \
  --file "$tmp/ctx/docker-compose.yml" up --detach --no-build >"$tmp/compose-up.log" 2>&1 \
  || { cat "$tmp/compose-up.log" >&2; die "docker-compose up failed"; }

container_of() { compose ps --quiet "$1"; }
exit_code_of() { docker inspect --format '{{.State.Status}} {{.State.ExitCode}}' "$(container_of "$1")"; }

log "waiting up to ${GAME_TIMEOUT} s for the bots' game to end"
deadline=$((SECONDS + GAME_TIMEOUT))
while :; do
  bots_done=true
  for bot in bot1 bot2; do
    [[ $(exit_code_of "$bot") == exited* ]] || bots_done=false
  done
  if [[ $bots_done == true && -s $data/results.jsonl ]]; then
    break
  fi
  [[ $SECONDS -lt $deadline ]] || die "no finished game within ${GAME_TIMEOUT} s"
  server_state="$(exit_code_of gameserver)"
  [[ $server_state == running* ]] || die "the server container stopped: $server_state"
  sleep 1
done
for bot in bot1 bot2; do
  [[ $(exit_code_of "$bot") == "exited 0" ]] || die "$bot ended with: $(exit_code_of "$bot")"
done
log "game over; both bots exited 0"

# --- 7. checks ---------------------------------------------------------------------------------
server="$(container_of gameserver)"
health="$(docker inspect --format '{{.State.Health.Status}}' "$server")"
[[ $health == healthy ]] || die "server health is $health"

# The server itself runs unprivileged (the entrypoint drops root after preparing /data).
server_uid="$(docker top "$server" -eo pid,uid,args | awk '/piranhas-server/ {print $2; exit}')"
[[ $server_uid == "$SERVER_UID" ]] || die "piranhas-server runs as uid '${server_uid}', not $SERVER_UID"

# The published port answers the protocol from the host, and the password from the secret
# really is the admin password.
port="$(compose port gameserver 13050 | awk -F: '{print $NF}')"
# (The check is stdlib-only: the host's python3 runs it as a plain script.)
python3 "$REPO/server/healthcheck.py" --host 127.0.0.1 --port "$port" --timeout 5 \
  || die "health check from the host failed"
python3 - "$port" "$(head -n1 "$REPO/docker/admin-password.example")" <<'EOF' || die "admin login failed"
import socket, sys
port, password = int(sys.argv[1]), sys.argv[2]
# A successful <authenticate> has no answer; an authenticated <observe> of an unknown room is
# answered "Couldn't find a room", an unauthenticated one "requires authentication".
with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
    sock.sendall(f'<protocol><authenticate password="{password}"/><observe roomId="smoke"/>'.encode())
    data = b""
    while b"</errorpacket>" not in data:
        chunk = sock.recv(4096)
        if not chunk:
            break
        data += chunk
    sock.sendall(b"<close/>")
text = data.decode()
if "find a room with id smoke" not in text:
    sys.exit(f"unexpected answer to an authenticated observe: {text!r}")
print("admin login with the secret's password: ok")
EOF

replays=("$data"/replays/*.xml)
[[ ${#replays[@]} -eq 1 && -s ${replays[0]} ]] || die "expected one replay in $data/replays, found: ${replays[*]}"
python3 - "${replays[0]}" "$data/results.jsonl" <<'EOF' || die "replay or results line is wrong"
import json, sys
import xml.etree.ElementTree as ET
replay_path, results_path = sys.argv[1], sys.argv[2]
root = ET.parse(replay_path).getroot()  # raises on invalid XML
assert root.tag == "protocol", f"replay root is <{root.tag}>"
rooms = list(root)
assert rooms and all(room.tag == "room" for room in rooms), "replay holds non-room elements"
mementos = [r for r in rooms if r.find("data").get("class") == "memento"]
last = rooms[-1].find("data")
assert last.get("class") == "result", f"replay ends with {last.get('class')!r}, not a result"
winner = last.find("winner")
assert winner is not None, "result without <winner>"
lines = [line for line in open(results_path, encoding="utf-8").read().splitlines() if line.strip()]
assert len(lines) == 1, f"expected one results line, got {len(lines)}"
record = json.loads(lines[0])
print(f"replay: {replay_path.rsplit('/', 1)[-1]}: {len(mementos)} mementos, ends with a result")
turn = mementos[-1].find("data/state").get("turn") if mementos else "?"
print(
    f"RESULT: winner={winner.get('team', 'none')} regular={winner.get('regular')} "
    f"turn={turn} reason={winner.get('reason')!r}"
)
# The per-move lists make the line long; show everything else.
summary = {key: value for key, value in record.items() if key not in ("moves", "moveMs")}
print(f"results line ({len(record.get('moves', []))} moves): {json.dumps(summary)}")
EOF

# SIGTERM reaches the server (tini forwards it) and it exits cleanly, long before SIGKILL.
stop_started=$SECONDS
compose stop --timeout 20 gameserver >/dev/null 2>&1
stop_took=$((SECONDS - stop_started))
state="$(exit_code_of gameserver)"
[[ $state == "exited 0" ]] || die "server after SIGTERM: $state (after ${stop_took} s)"
[[ $stop_took -lt 15 ]] || die "server took ${stop_took} s to stop on SIGTERM"
log "server stopped on SIGTERM in ${stop_took} s with exit code 0"
