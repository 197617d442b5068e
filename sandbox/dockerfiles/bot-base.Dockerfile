# piranhas/bot-base:bookworm — the base of bots given as a folder with a start.sh, and the image
# the per-bot network relay runs in (it needs python3 only).
#
#   docker build -f sandbox/dockerfiles/bot-base.Dockerfile -t piranhas/bot-base:bookworm EMPTY_DIR
#
# debian:bookworm-slim is whatever the daemon has under that name: from a registry, or imported
# from a debootstrapped rootfs where none is reachable (.ci/docker-env.sh). python3-lxml: this
# project's protocol package (and many Python bots) need it; iproute2: `ip` for bots that look
# at their network.
ARG BASE_IMAGE=debian:bookworm-slim
FROM ${BASE_IMAGE}
ARG DEBIAN_FRONTEND=noninteractive
RUN apt-get update \
    && apt-get install -y --no-install-recommends python3 python3-lxml iproute2 \
    && rm -rf /var/lib/apt/lists/* \
    && groupadd --system --gid 10002 bot \
    && useradd --system --uid 10002 --gid 10002 --no-create-home --home-dir /tmp bot
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
WORKDIR /tmp
