# A bot from a folder with a start.sh (sandbox.images.build_bot_image): the folder becomes /bot,
# start.sh the entrypoint, so `docker run IMAGE -h gameserver -p 13050 -r CODE` is the contest's
# `start.sh -h gameserver -p 13050 -r CODE`. It runs as the unprivileged user `bot`; its root
# file system is read-only at run time (only /tmp is writable).
ARG BOT_BASE=piranhas/bot-base:bookworm
FROM ${BOT_BASE}
COPY . /bot
RUN chmod 0755 /bot/start.sh
USER bot
WORKDIR /bot
ENTRYPOINT ["/bot/start.sh"]
