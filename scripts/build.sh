#!/usr/bin/env bash
# Configures (once) and builds rdmasim into ./build.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
[ -f build/build.ninja ] || meson setup build --buildtype=debugoptimized
ninja -C build
