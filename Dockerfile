# Piranhas game server (and, as target "bot", the example socha bot of docker-compose.yml; as
# target "league", the coordinator and worker of a distributed league, deploy/).
#
#   docker build -t piranhas-server .                   # the server (last stage = default target)
#   docker build --target bot -t piranhas-bot .         # the example bot
#   docker build --target league -t piranhas-league .   # distributed league (docs/distributed.md)
#
# Works with the classic builder and with BuildKit. Optional build input: wheels in
# docker/wheels/ are preferred and, when they cover everything, pip never touches the network
# (for machines whose HTTPS goes through a proxy that containers do not trust;
# .ci/docker-smoke.sh fills it with `pip download`). The directory is empty in the repository,
# so elsewhere pip installs from PyPI as usual.

# Any Debian-based image whose python3 is 3.11 or newer.
ARG BASE_IMAGE=debian:bookworm-slim

# --- common base: Debian's Python 3.11, tini as PID 1, a virtualenv ---------------------------
FROM ${BASE_IMAGE} AS base
ARG DEBIAN_FRONTEND=noninteractive
RUN apt-get update \
    && apt-get install -y --no-install-recommends python3 python3-venv tini ca-certificates \
    && rm -rf /var/lib/apt/lists/* \
    && python3 -m venv /opt/venv
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1
COPY docker/wheels/ /tmp/wheels/
COPY docker/pip-install.sh /usr/local/bin/pip-install

# --- example bot: socha==4.3.9 (the official Python client), random moves ---------------------
FROM base AS bot
# socha's starter imports pkg_resources, which setuptools>=81 no longer ships.
RUN pip-install "socha==4.3.9" "setuptools<81" && rm -rf /tmp/wheels
RUN groupadd --system --gid 10002 bot \
    && useradd --system --uid 10002 --gid 10002 --no-create-home --home-dir /nonexistent bot
COPY docker/bot.py /opt/bot/bot.py
USER bot
WORKDIR /tmp
ENTRYPOINT ["/usr/bin/tini", "--", "python", "/opt/bot/bot.py"]
CMD ["--host", "gameserver", "--port", "13050"]

# --- every package of this repository, installed -------------------------------------------------
FROM base AS install
WORKDIR /src
# Only what the wheel needs, so edits to tests or docs do not invalidate the install layer.
COPY pyproject.toml README.md* ./
COPY engine/ engine/
COPY protocol/ protocol/
COPY server/ server/
# The server's clients and companions, so every console script of the package works here too
# (piranhas-match, piranhas-league, piranhas-bot, in cli/); the game server never imports them.
COPY launching/ launching/
COPY cli/ cli/
COPY client/ client/
COPY bots/ bots/
COPY runner/ runner/
COPY league/ league/
COPY sandbox/ sandbox/
COPY fleet/ fleet/
COPY web/ web/
COPY check/ check/
COPY analysis/ analysis/
COPY ladder/ ladder/
RUN pip-install . && rm -rf /tmp/wheels /src
WORKDIR /

# --- a distributed league's coordinator and worker (deploy/, docs/distributed.md) -----------------
FROM install AS league
# The `distributed` extra (Dramatiq, psycopg) on top of the installed package: pip adds only the
# extra's dependencies, from the wheelhouse when it has them.
COPY docker/wheels/ /tmp/wheels/
RUN pip-install "piranhas-server[distributed]" && rm -rf /tmp/wheels
RUN groupadd --system --gid 10003 league \
    && useradd --system --uid 10003 --gid 10003 --no-create-home --home-dir /work league \
    && install -d -o league -g league /work /work/logs /bots
# The example bots of deploy/league.example.toml; a `command` team's bot must exist in here.
COPY deploy/bots/ /bots/
USER league
WORKDIR /work
# Worker logs (worker.log, the bots' logs): the compose files mount a volume here.
VOLUME ["/work/logs"]
# tini forwards SIGTERM to the worker: it gives its running match back to the queue and exits.
ENTRYPOINT ["/usr/bin/tini", "--", "piranhas-league"]
CMD ["--help"]

# --- the game server ------------------------------------------------------------------------------
FROM install AS server
# Fixed ids, so files on a bind-mounted /data have a predictable owner on the host.
RUN groupadd --system --gid 10001 piranhas \
    && useradd --system --uid 10001 --gid 10001 --no-create-home --home-dir /data piranhas \
    && install -d -o piranhas -g piranhas -m 0750 /data

COPY docker/container.properties /etc/piranhas/server.properties
COPY docker/entrypoint.py /usr/local/lib/piranhas/entrypoint.py

# Replays (replays/) and results (results.jsonl) live here; mount a volume or a host directory.
VOLUME ["/data"]
WORKDIR /data
EXPOSE 13050

# The entrypoint starts as root only to make a bind-mounted /data writable and to read the
# password secret, then drops to the user piranhas (uid 10001) for good; with `--user` it runs
# as that user from the start. tini is PID 1: it forwards SIGTERM/SIGINT to the server (which
# ends running games with a recorded result) and reaps zombies. The command (empty here) is
# passed to piranhas-server as extra flags, e.g. `docker run IMAGE --log-level debug`.
ENTRYPOINT ["/usr/bin/tini", "--", "python", "/usr/local/lib/piranhas/entrypoint.py"]
CMD []

# Talks the protocol (a joinRoom that the lobby must answer with an errorpacket), so "healthy"
# means the lobby answers, not merely that the port is open. The first check runs after
# --interval; docker-compose.yml shortens it so the bots start soon.
HEALTHCHECK --interval=30s --timeout=10s --start-period=10s --retries=3 \
    CMD ["python", "-m", "server.healthcheck", "--quiet", "--host", "127.0.0.1", "--port", "13050", "--timeout", "5"]
