#!/usr/bin/env bash
# Runs every fuzz target (or those named) with libFuzzer for SECONDS each,
# one after another:
#
#   bash scripts/fuzz.sh 60                       # all targets, a minute each
#   bash scripts/fuzz.sh 600 openai_stream        # one target, ten minutes
#
# Builds with clang (installing clang and libFuzzer's runtime if missing)
# into build-fuzz/ (or $TROUPE_FUZZ_BUILD_DIR), with coverage, AddressSanitizer
# and UBSan in every library. Each target grows its own corpus in
# build-fuzz/corpus/NAME, seeded from fuzz/corpus/NAME and tests/fixtures. An
# input that crashes is kept as build-fuzz/crashes/NAME/crash-… (once fixed,
# copy it into fuzz/corpus/NAME: ctest then replays it in every build). Exits
# non-zero if any target crashed; the figures of each run are printed at the
# end (and the logs are in build-fuzz/logs).
#
#   bash scripts/fuzz.sh --build-only             # only build (scripts/test.sh)
#   bash scripts/fuzz.sh --no-build 5 envelope    # only run (ctest's "fuzz run: NAME")
set -euo pipefail
cd "$(dirname "$0")/.."

build=1
run=1
case "${1:-}" in
  --build-only) run=0; shift; set -- 0 "$@" ;;
  --no-build) build=0; shift ;;
esac
seconds="${1:?usage: scripts/fuzz.sh [--build-only | --no-build] SECONDS [TARGET...]}"
shift
all_targets=(sse_parser openai_stream anthropic_stream responses envelope tool_arguments mcp_tool_listing
  thread_json mcp_message openai_chat serve_config scenario_toml)
targets=("$@")
((${#targets[@]})) || targets=("${all_targets[@]}")

build_dir="${TROUPE_FUZZ_BUILD_DIR:-build-fuzz}"
if ((build)); then
  bash scripts/install-deps.sh build fuzz
  launcher=()
  command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++ \
    -DTROUPE_FUZZ=ON -DTROUPE_BUILD_TESTS=OFF -DTROUPE_BUILD_BENCH=OFF -DTROUPE_WERROR=ON "${launcher[@]}" >/dev/null
  cmake --build "$build_dir" --parallel "$(nproc)" --target "${targets[@]/#/fuzz_}"
fi
((run)) || exit 0

seeds_of() {
  echo "fuzz/corpus/$1"
  case "$1" in
    sse_parser) ls tests/fixtures/*.sse ;;
    openai_stream) ls tests/fixtures/openai_*.sse ;;
    anthropic_stream) ls tests/fixtures/anthropic_*.sse ;;
    scenario_toml) ls examples/scenarios/*.toml ;;
  esac
}

failed=()
summary=()
for name in "${targets[@]}"; do
  corpus="$build_dir/corpus/$name"
  crashes="$build_dir/crashes/$name"
  log="$build_dir/logs/$name.log"
  mkdir -p "$corpus" "$crashes" "$(dirname "$log")"
  # libFuzzer reads seed files only from directories: copy them in.
  for seed in $(seeds_of "$name"); do
    if [ -d "$seed" ]; then cp -n "$seed"/* "$corpus"/ 2>/dev/null || true; else cp -n "$seed" "$corpus"/; fi
  done
  echo "== $name: $seconds s"
  if [ ! -x "$build_dir/fuzz/fuzz_$name" ]; then
    failed+=("$name")
    summary+=("$name: NOT BUILT ($build_dir/fuzz/fuzz_$name is missing: scripts/fuzz.sh --build-only)")
    continue
  fi
  status=0
  "$build_dir/fuzz/fuzz_$name" "$corpus" -max_total_time="$seconds" -timeout=10 -print_final_stats=1 \
    -artifact_prefix="$crashes/" >"$log" 2>&1 || status=$?
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log")
  if ((status != 0)); then
    failed+=("$name")
    summary+=("$name: CRASHED after ${runs:-?} runs (see $log and $crashes)")
    grep -m1 -E "ERROR|runtime error|invariant broken|deadly signal|timeout" "$log" || true
  else
    summary+=("$name: clean for $seconds s, ${runs:-?} runs, ${rate:-?} exec/s, corpus $(ls "$corpus" | wc -l) inputs")
  fi
done

printf '%s\n' "${summary[@]}"
if ((${#failed[@]})); then
  echo "failed: ${failed[*]}" >&2
  exit 1
fi
