#!/usr/bin/env bash
# Installs what is missing, builds, and runs the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
meson test -C build --print-errorlogs "$@"
# The drop-in library under ASan + UBSan (a second build dir, build-asan); zero reports.
[ "${RDMASIM_SANITIZE:-1}" = 0 ] || bash scripts/sanitize.sh
