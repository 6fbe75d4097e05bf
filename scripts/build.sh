#!/usr/bin/env bash
# Configures and builds troupe into build/ (or $TROUPE_BUILD_DIR). Extra
# arguments are passed to `cmake --build` (for example `--target NAME`);
# $TROUPE_CMAKE_ARGS to the configure step (for example a sanitizer build).
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir="${TROUPE_BUILD_DIR:-build}"
launcher=()
# Several build directories (sanitizers, fuzzing, a second checkout) share one cache.
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTROUPE_WERROR=ON "${launcher[@]}" ${TROUPE_CMAKE_ARGS:-} >/dev/null
cmake --build "$build_dir" --parallel "$(nproc)" "$@"
