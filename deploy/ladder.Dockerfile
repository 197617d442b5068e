# The contest ladder's site and workers (deploy/ladder.compose.yml, docs/ladder.md "Deploying
# it"): the league image (the root Dockerfile's `league` stage, which installs piranhas-ladder
# with the `distributed` extra) plus the Docker client, with which a worker starts every bot in
# a contest-limited container on the host's daemon (its socket is mounted into the worker).
#
#   docker build --target league -t piranhas-league:local .              # the repository root
#   docker build -f deploy/ladder.Dockerfile -t piranhas-ladder:local deploy/
#
# A file of its own, not a stage of the root Dockerfile: the classic builder builds every stage
# before its target, and the server's image should not install a Docker client.
ARG LEAGUE_IMAGE=piranhas-league:local
FROM ${LEAGUE_IMAGE}
USER root
ARG DEBIAN_FRONTEND=noninteractive
# Debian bookworm packages the client only with the daemon (docker.io); the daemon never runs
# here (no init, and the compose file starts none).
RUN apt-get update \
    && apt-get install -y --no-install-recommends docker.io \
    && rm -rf /var/lib/apt/lists/* \
    && install -d -o league -g league -m 0750 /ladder /ladder/data
USER league
WORKDIR /ladder
# Uploads, cards, replays, logs: one volume for the site and every worker of this host.
VOLUME ["/ladder/data"]
EXPOSE 8090
ENTRYPOINT ["/usr/bin/tini", "--", "piranhas-ladder"]
CMD ["--help"]
