#!/usr/bin/env bash
# Configures and builds troupe into build/ (or $TROUPE_BUILD_DIR). Extra
# arguments are passed to `cmake --build` (for example `--target NAME`).
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir="${TROUPE_BUILD_DIR:-build}"
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTROUPE_WERROR=ON >/dev/null
cmake --build "$build_dir" --parallel "$(nproc)" "$@"
