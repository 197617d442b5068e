#!/bin/sh
# The contest calls: start.sh -h gameserver -p 13050 -r CODE (long forms and any order too).
exec bash "$(dirname "$0")/bot.sh" "$@"
