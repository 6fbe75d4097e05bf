#!/usr/bin/env bash
# Installs what is missing, builds everything warning-free, and runs every
# test through ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh
cd "${TROUPE_BUILD_DIR:-build}"
ctest --output-on-failure --parallel "$(nproc)"
