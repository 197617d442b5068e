#!/bin/sh
# pip install "$@" inside an image build, preferring the optional wheelhouse /tmp/wheels.
# If the wheelhouse covers everything, nothing is downloaded (offline builds); otherwise pip
# falls back to the package index, still taking what it can from the wheelhouse.
set -eu
have_wheels=false
for wheel in /tmp/wheels/*.whl; do
  if [ -e "$wheel" ]; then
    have_wheels=true
  fi
  break
done
if [ "$have_wheels" = true ]; then
  if pip install --no-index --find-links /tmp/wheels "$@"; then
    exit 0
  fi
  echo "pip-install: the wheelhouse is incomplete, using the package index too" >&2
  exec pip install --find-links /tmp/wheels "$@"
fi
exec pip install "$@"
