#!/usr/bin/env bash
# Builds and runs the benchmarks; prints medians of 5 repetitions.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh --target thread_bench
exec "${TROUPE_BUILD_DIR:-build}/bench/thread_bench" --benchmark_repetitions=5 \
  --benchmark_report_aggregates_only=true "$@"
