#!/usr/bin/env bash
# Installs what is missing (the packages of parts build and test in
# scripts/packages.txt, the PostgreSQL server included), builds everything
# warning-free, and runs every test through ctest, beside a throwaway
# PostgreSQL server for the PostgreSQL store's tests. A skipped test fails
# the run, but for the PostgreSQL cases when no server can start. The MCP
# tests' servers come from the npm registry, pinned by
# tests/mcp/package-lock.json, the serve tests' node packages (the openai
# client, and playwright-core, which drives Debian's chromium for the web
# chat page's test) by tests/serve/js/package-lock.json (npm ci; Debian's
# nodejs and npm if missing). nginx is the load balancer of the cluster
# example (scripts/cluster-demo.sh), which a ctest runs.
#
# Beside the gcc build, the fuzz targets are built with clang, libFuzzer,
# ASan and UBSan into build-fuzz/ (scripts/fuzz.sh --build-only: a clang
# warning or error fails the run before any test), and ctest runs each for
# a few seconds ("fuzz run: NAME"; a crash fails it) besides replaying its
# corpus ("fuzz regression: NAME"). ctest also checks every tracked .cpp and
# .hpp against .clang-format ("clang-format compliance").
#
# --sanitize builds the test suite with AddressSanitizer and
# UndefinedBehaviorSanitizer into build-sanitize/ (or $TROUPE_BUILD_DIR) and
# runs it the same way; any report fails the test that made it.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
if [ "${1:-}" = "--sanitize" ]; then
  export TROUPE_BUILD_DIR="${TROUPE_BUILD_DIR:-build-sanitize}"
  export TROUPE_CMAKE_ARGS="${TROUPE_CMAKE_ARGS:-} -DTROUPE_SANITIZE=ON -DTROUPE_BUILD_BENCH=OFF"
  # abort_on_error: a report ends the process with a signal ctest cannot mistake
  # for a pass; detect_leaks: a leak is a finding too.
  export ASAN_OPTIONS="${ASAN_OPTIONS:-halt_on_error=1:abort_on_error=1:detect_leaks=1:check_initialization_order=1}"
  export UBSAN_OPTIONS="${UBSAN_OPTIONS:-halt_on_error=1:abort_on_error=1:print_stacktrace=1}"
elif [ $# -gt 0 ]; then
  echo "usage: scripts/test.sh [--sanitize]" >&2
  exit 2
else
  bash scripts/fuzz.sh --build-only
  fuzz_dir="${TROUPE_FUZZ_BUILD_DIR:-build-fuzz}"
  [[ "$fuzz_dir" = /* ]] || fuzz_dir="$root/$fuzz_dir"
  export TROUPE_CMAKE_ARGS="${TROUPE_CMAKE_ARGS:-} -DTROUPE_FUZZ_RUN_DIR=$fuzz_dir"
fi
bash scripts/install-deps.sh build test
npm ci --prefix tests/mcp --no-audit --no-fund
npm ci --prefix tests/serve/js --no-audit --no-fund
bash scripts/build.sh
cd "${TROUPE_BUILD_DIR:-build}"
# A test that hangs fails after 300 s (the slowest takes ~15 s) instead of
# holding the run until CI's limit. scripts/run-ctest.py lists what skipped and
# why, and fails the run on any skip but a PostgreSQL case's without a server.
bash "$root/scripts/with-postgres.sh" python3 "$root/scripts/run-ctest.py" \
  --output-on-failure --parallel "$(nproc)" --timeout 300
