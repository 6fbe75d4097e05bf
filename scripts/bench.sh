#!/usr/bin/env bash
# Builds and runs the benchmarks and prints their medians:
#   thread_bench   the pure core (Google Benchmark, 5 repetitions)
#   runtime_bench  the actor runtime next to raw CAF (5 runs, each in its own process)
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh --target thread_bench --target runtime_bench
build="${TROUPE_BUILD_DIR:-build}"
"$build/bench/thread_bench" --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
"$build/bench/runtime_bench" --repeat 5
