#!/usr/bin/env bash
# Builds and runs the benchmarks and prints their figures:
#   thread_bench        the pure core (Google Benchmark, medians of 5)
#   runtime_bench       the actor runtime next to raw CAF (medians of 5, each run in its own process)
#   agent_memory_bench  memory per agent after one turn (1,000 to 100,000 agents), spawn and teardown seconds
#   stream_bench        parsing a recorded model stream (Google Benchmark, medians of 5)
#   concurrent_streams  model streams one HTTP I/O thread sustains against a local server
#   load_bench          the whole stack against a local model server, 1, 10 and 100 conversations
#   endpoint_pool_bench model calls per second through an endpoint pool over two local mock servers,
#                       against the HTTP provider used directly with the same concurrency
#   store_bench         thread stores: commit latency and throughput, loads, bytes on disk, and CPU
#                       per commit with 10,000 threads committing at once
#                       (PostgreSQL on a throwaway server that scripts/with-postgres.sh starts)
#   durable_bench       simulations committing every step: memory, SQLite, SQLite fsync, PostgreSQL;
#                       one agent's commits slowed down next to none
#   serve_bench         troupe serve: 1,000 SSE conversations of 10 turns, the overhead per turn at low
#                       load (--soak-seconds N adds a memory soak)
#   world_bench         the social world's cost per round (check, apply, observe) at 10k, 100k and 1M agents
#   simulation_bench    scenario runs (scripted, every agent every round) at 10k and 100k agents: activations/s,
#                       CPU and RSS per activation; then 10k agents against a 5 ms mock model server next to a
#                       plain load client (--million adds 1M agents: ~15 minutes, up to ~14 GB)
#   cluster_handover_bench  a node of three cluster nodes leaves gracefully: the leave to the first ask answered
#                       by the new holder, and each shard's release and acquisition (PostgreSQL as above)
#   cluster_asks_bench  asks/s through 1, 2 and 3 cluster nodes next to a plain runtime on the same PostgreSQL,
#                       scripted model, then a 5 ms mock model server
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh build bench
bash scripts/build.sh --target thread_bench --target runtime_bench --target agent_memory_bench --target stream_bench --target concurrent_streams \
  --target load_bench --target endpoint_pool_bench --target store_bench --target durable_bench --target serve_bench \
  --target world_bench --target simulation_bench --target cluster_handover_bench --target cluster_asks_bench
build="${TROUPE_BUILD_DIR:-build}"
gbench=(--benchmark_repetitions=5 --benchmark_report_aggregates_only=true)
"$build/bench/thread_bench" "${gbench[@]}"
"$build/bench/runtime_bench" --repeat 5
"$build/bench/agent_memory_bench" --repeat 3
"$build/bench/stream_bench" "${gbench[@]}"
"$build/bench/concurrent_streams" --streams 1000
"$build/bench/load_bench" --repeat 3
"$build/bench/world_bench" --repeat 3
"$build/bench/simulation_bench" --repeat 3
"$build/bench/simulation_bench" --mock --repeat 3
"$build/bench/endpoint_pool_bench" --repeat 3
bash scripts/with-postgres.sh "$build/bench/store_bench" --repeat 3
bash scripts/with-postgres.sh "$build/bench/durable_bench" --repeat 3
bash scripts/with-postgres.sh sh -c "$build"'/bench/cluster_handover_bench "$TROUPE_TEST_POSTGRES" --rounds 5'
bash scripts/with-postgres.sh sh -c "$build"'/bench/cluster_asks_bench "$TROUPE_TEST_POSTGRES" --seconds 5 --repeat 3'
bash scripts/with-postgres.sh sh -c "$build"'/bench/cluster_asks_bench "$TROUPE_TEST_POSTGRES" --seconds 5 --repeat 3 --mock'
"$build/bench/serve_bench" --conversations 1000 --turns 10
