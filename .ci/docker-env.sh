#!/usr/bin/env bash
# A private Docker daemon and the locally built base image, for the Docker tests on machines
# without a reachable registry. Used by .ci/docker-smoke.sh (sourced) and by .ci/run's league
# Docker test (as a command):
#
#   eval "$(.ci/docker-env.sh start)"   # prints DOCKER_HOST=...; DOCKER_ENV_PID=...
#   ...                                 # docker / pytest -m docker with that DOCKER_HOST
#   .ci/docker-env.sh stop              # stops that daemon by its PID
#
# Runs as root. Installs docker.io and debootstrap from Debian when missing, starts dockerd with
# its own socket, exec-root and temp dir under $DOCKER_ENV_DIR, and imports debian:bookworm-slim
# from a debootstrapped rootfs (no registry needed; Dockerfiles naming that base build unchanged
# anywhere else). Caches under $SMOKE_CACHE (default /var/cache/piranhas-docker-smoke): the
# rootfs tarball and the daemon's data-root, so reruns take seconds. SMOKE_FRESH=1 uses a
# throw-away data-root.
set -euo pipefail

readonly DOCKER_ENV_CACHE="${SMOKE_CACHE:-/var/cache/piranhas-docker-smoke}"
readonly DOCKER_ENV_BASE_IMAGE=debian:bookworm-slim
# Debian's client matches Debian's daemon (20.10) and its classic builder; a newer docker CLI
# earlier on PATH would insist on buildx.
readonly DOCKER_ENV_CLI=/usr/bin/docker

docker_env_started=${docker_env_started:-$SECONDS}
docker_env_log() { printf '[docker-env %3ds] %s\n' "$((SECONDS - docker_env_started))" "$*" >&2; }
docker_env_die() { docker_env_log "FAIL: $*"; exit 1; }

# Installs what is missing from Debian; "compose" also installs docker-compose.
docker_env_install() {
  local missing=()
  if ! command -v dockerd >/dev/null || [[ ! -x $DOCKER_ENV_CLI ]]; then
    missing+=(docker.io)
  fi
  command -v debootstrap >/dev/null || missing+=(debootstrap)
  if [[ ${1:-} == compose && ! -x /usr/bin/docker-compose ]]; then
    missing+=(docker-compose)
  fi
  if [[ ${#missing[@]} -gt 0 ]]; then
    docker_env_log "installing ${missing[*]} from Debian"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  fi
}

# docker_env_start DIR: a daemon whose socket, exec-root and log are in DIR (created). Sets and
# exports DOCKER_HOST, sets docker_env_pid. The daemon is stopped by docker_env_stop DIR.
docker_env_start() {
  local dir=$1 data_root stale_pid
  [[ $(id -u) -eq 0 ]] || docker_env_die "must run as root (it starts a Docker daemon)"
  mkdir -p "$DOCKER_ENV_CACHE" "$dir/exec"
  data_root="$DOCKER_ENV_CACHE/data-root"
  # A daemon of another (or a killed) run may still own the cached data-root; two daemons must
  # never share one, so use a throw-away data-root then.
  stale_pid="$(cat "$DOCKER_ENV_CACHE/dockerd.pid" 2>/dev/null || true)"
  if [[ ${SMOKE_FRESH:-0} == 1 ]]; then
    data_root="$dir/data-root"
  elif [[ -n $stale_pid ]] && kill -0 "$stale_pid" 2>/dev/null \
    && grep -qa -- "$DOCKER_ENV_CACHE/data-root" "/proc/$stale_pid/cmdline" 2>/dev/null; then
    docker_env_log "dockerd $stale_pid still uses $DOCKER_ENV_CACHE/data-root: using a fresh one"
    data_root="$dir/data-root"
  fi
  mkdir -p "$data_root"
  export DOCKER_HOST="unix://$dir/docker.sock"
  # setsid: the daemon outlives a `start` command; 9>&-: it must not keep a caller's lock.
  setsid dockerd --data-root "$data_root" --exec-root "$dir/exec" --pidfile "$dir/dockerd.pid" \
    -H "$DOCKER_HOST" >"$dir/dockerd.log" 2>&1 </dev/null 9>&- &
  docker_env_pid=$!
  echo "$docker_env_pid" >"$dir/daemon.pid"
  if [[ $data_root == "$DOCKER_ENV_CACHE/data-root" ]]; then
    echo "$docker_env_pid" >"$DOCKER_ENV_CACHE/dockerd.pid"
  fi
  for _ in $(seq 1 150); do
    "$DOCKER_ENV_CLI" version >/dev/null 2>&1 && break
    kill -0 "$docker_env_pid" 2>/dev/null \
      || { cat "$dir/dockerd.log" >&2; docker_env_die "dockerd exited"; }
    sleep 0.2
  done
  "$DOCKER_ENV_CLI" version >/dev/null 2>&1 \
    || { tail -20 "$dir/dockerd.log" >&2; docker_env_die "dockerd not ready in 30 s"; }
  docker_env_log "dockerd $docker_env_pid ready" \
    "($("$DOCKER_ENV_CLI" info --format '{{.ServerVersion}}, {{.Driver}}'))"
  docker_env_base_image "$dir"
}

# The base image debian:bookworm-slim, from a cached debootstrap rootfs.
docker_env_base_image() {
  local dir=$1 rootfs_tar="$DOCKER_ENV_CACHE/bookworm-minbase.tar" mirror
  "$DOCKER_ENV_CLI" image inspect "$DOCKER_ENV_BASE_IMAGE" >/dev/null 2>&1 && return 0
  if [[ ! -s $rootfs_tar ]]; then
    mirror="$(awk '/^URIs:/ {print $2; exit}' /etc/apt/sources.list.d/debian.sources 2>/dev/null || true)"
    if [[ -z $mirror ]]; then
      mirror="$(awk '$1 == "deb" {print $2; exit}' /etc/apt/sources.list 2>/dev/null || true)"
    fi
    [[ -n $mirror ]] || docker_env_die "no Debian mirror found in apt's configuration"
    docker_env_log "debootstrap bookworm (minbase) from $mirror"
    timeout 900 debootstrap --variant=minbase bookworm "$dir/rootfs" "$mirror" \
      >"$dir/debootstrap.log" 2>&1 \
      || { tail -20 "$dir/debootstrap.log" >&2; docker_env_die "debootstrap failed"; }
    rm -rf "$dir"/rootfs/var/cache/apt/archives/*.deb "$dir"/rootfs/var/lib/apt/lists/*
    tar -C "$dir/rootfs" -cf "$rootfs_tar.part" .
    mv "$rootfs_tar.part" "$rootfs_tar"
    rm -rf "$dir/rootfs"
  fi
  docker_env_log "importing $rootfs_tar as $DOCKER_ENV_BASE_IMAGE"
  "$DOCKER_ENV_CLI" import "$rootfs_tar" "$DOCKER_ENV_BASE_IMAGE" >/dev/null
}

# docker_env_stop DIR: stops the daemon started in DIR by its PID and removes DIR.
docker_env_stop() {
  local dir=$1 pid
  pid="$(cat "$dir/daemon.pid" 2>/dev/null || true)"
  if [[ -n $pid ]] && kill -0 "$pid" 2>/dev/null; then
    # The cached data-root keeps the build cache; images replaced by this run's builds go.
    DOCKER_HOST="unix://$dir/docker.sock" "$DOCKER_ENV_CLI" image prune --force >/dev/null 2>&1 || true
    kill -TERM "$pid"
    for _ in $(seq 1 100); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.2
    done
    if kill -0 "$pid" 2>/dev/null; then
      docker_env_log "dockerd $pid did not stop within 20 s: killing it"
      kill -KILL "$pid"
    fi
    wait "$pid" 2>/dev/null || true
    while kill -0 "$pid" 2>/dev/null; do sleep 0.2; done  # not our child in `stop`
    if [[ $(cat "$DOCKER_ENV_CACHE/dockerd.pid" 2>/dev/null) == "$pid" ]]; then
      rm -f "$DOCKER_ENV_CACHE/dockerd.pid"
    fi
  fi
  # The exec-root may hold mounts only if dockerd died hard; never delete through them.
  if ! grep -q " $dir/" /proc/self/mounts; then
    rm -rf "$dir"
  else
    docker_env_log "left $dir in place: something is still mounted below it"
  fi
}

if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
  env_dir="${DOCKER_ENV_DIR:-/tmp/piranhas-docker-env}"
  case "${1:-}" in
    start)
      # compose too: the league's Docker tests run docker-compose.league.yml with it.
      docker_env_install compose
      [[ ! -e $env_dir/daemon.pid ]] || docker_env_die "$env_dir is in use: '$0 stop' first"
      docker_env_start "$env_dir" >&2
      printf 'export DOCKER_HOST=%q DOCKER_ENV_PID=%q\n' "$DOCKER_HOST" "$docker_env_pid"
      ;;
    stop) docker_env_stop "$env_dir" ;;
    *) echo "usage: $0 start|stop  (state in \$DOCKER_ENV_DIR, default $env_dir)" >&2; exit 2 ;;
  esac
fi
