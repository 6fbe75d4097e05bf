#!/usr/bin/env bash
# Three `troupe serve --cluster` nodes behind nginx, offline: a throwaway
# PostgreSQL (scripts/with-postgres.sh) holds the cluster and the
# conversations, each node runs the example config's agent (a scripted
# model), and nginx (installed if missing) spreads requests over the nodes
# with no affinity. A few conversations go through nginx, each message to
# whichever node nginx picks; then the cluster's status and each node's
# routed asks are shown. Then the node that holds the agent's shard is
# killed with SIGKILL, and the conversations go on through nginx: the
# survivors take the shard once the dead node's heartbeat is dead_after old,
# and a message nginx had sent to the dead node is sent again to another with
# its Idempotency-Key, so no turn runs twice. The survivors leave on SIGTERM.
# It exits non-zero if any message is not answered (ctest runs it).
#
#   bash scripts/cluster-demo.sh          # builds troupe if needed
#   KEEP=1 bash scripts/cluster-demo.sh   # leaves everything running until Enter
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

if [ -z "${TROUPE_TEST_POSTGRES:-}" ]; then
  bash scripts/install-deps.sh build cluster-demo
  bash scripts/build.sh --target troupe
  exec bash scripts/with-postgres.sh bash "$0" "$@"
fi
# A database of its own on the server (which the test suite shares).
demo_db="troupe_cluster_demo_$$"
psql -q "$TROUPE_TEST_POSTGRES" -c "CREATE DATABASE $demo_db" >/dev/null
database="${TROUPE_TEST_POSTGRES%/*}/$demo_db"
troupe="${TROUPE_BINARY:-$root/${TROUPE_BUILD_DIR:-build}/apps/troupe}"
[ -x "$troupe" ] || { echo "cluster-demo: no $troupe (run scripts/build.sh --target troupe)" >&2; exit 1; }
nginx=$(command -v nginx || echo /usr/sbin/nginx)
# 77: what ctest takes for "skipped".
[ -x "$nginx" ] || { echo "troupe-skip: nginx is not installed (Debian package nginx)"; exit 77; }

dir=$(mktemp -d /tmp/troupe-cluster-demo.XXXXXX)
pids=()
nginx_pid=""
stop() {
  # SIGTERM: each node finishes its turns and leaves the cluster.
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  if [ -n "$nginx_pid" ]; then kill -QUIT "$nginx_pid" 2>/dev/null && wait "$nginx_pid" 2>/dev/null || true; fi
  rm -rf "$dir"
  psql -q "$TROUPE_TEST_POSTGRES" -c "DROP DATABASE IF EXISTS $demo_db WITH (FORCE)" >/dev/null 2>&1 || true
}
trap stop EXIT

free_port() {
  local port=$1
  while (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; do port=$((port + 1)); done
  echo "$port"
}

export TROUPE_CLUSTER_SECRET="cluster-demo-secret-$RANDOM$RANDOM"
export TROUPE_BOB_KEY="sk-example-bob-0123456789"
alice="sk-example-alice-0123456789"
metrics_key="sk-cluster-demo-metrics-0123"

# The example config without its SQLite store (a node's store is the
# cluster's database), its script named by absolute path, and a metrics key.
http_ports=()
for n in 1 2 3; do
  port=$(free_port $((18080 + n)))
  http_ports+=("$port")
  sed -e '/^store = /d' -e "s|^listen = .*|listen = \"127.0.0.1:$port\"|" \
      -e "s|^script = \"scripts/|script = \"$root/examples/scripts/|" examples/serve.toml >"$dir/node$n.toml"
  cat >>"$dir/node$n.toml" <<EOF

[[keys]]
key = "$metrics_key"
user = "prometheus"
role = "metrics"

[cluster]
node_id = "node-$n"
listen = "127.0.0.1:0"
shards = 16
heartbeat_interval_seconds = 0.5
dead_after_seconds = 5
drain_timeout_seconds = 10
EOF
  "$troupe" serve --config "$dir/node$n.toml" --cluster "$database" >"$dir/node$n.log" 2>&1 &
  pids+=($!)
done

for port in "${http_ports[@]}"; do
  for _ in $(seq 1 100); do
    curl -fsS "http://127.0.0.1:$port/readyz" >/dev/null 2>&1 && break
    sleep 0.1
  done
  curl -fsS "http://127.0.0.1:$port/readyz" >/dev/null || { cat "$dir"/node*.log >&2; exit 1; }
done
echo "cluster-demo: three nodes ready on ports ${http_ports[*]}"

# nginx as the load balancer: round robin, no affinity, streams unbuffered.
lb_port=$(free_port 18080)
mkdir -p "$dir/nginx"
{
  echo "worker_processes 1; pid $dir/nginx/nginx.pid; error_log $dir/nginx/error.log;"
  echo "events { worker_connections 256; }"
  echo "http {"
  echo "  access_log $dir/nginx/access.log;"
  echo "  client_body_temp_path $dir/nginx/body; proxy_temp_path $dir/nginx/proxy;"
  echo "  fastcgi_temp_path $dir/nginx/fastcgi; uwsgi_temp_path $dir/nginx/uwsgi; scgi_temp_path $dir/nginx/scgi;"
  echo "  upstream troupe {"
  for port in "${http_ports[@]}"; do echo "    server 127.0.0.1:$port;"; done
  echo "    keepalive 16;"
  echo "  }"
  echo "  server {"
  echo "    listen 127.0.0.1:$lb_port;"
  echo "    location / {"
  echo "      proxy_pass http://troupe; proxy_http_version 1.1; proxy_set_header Connection \"\";"
  echo "      proxy_buffering off; proxy_read_timeout 300s;"
  # A node that is gone: the request goes to the next one, even a POST
  # (every message here carries an Idempotency-Key, so a retry runs no turn twice).
  echo "      proxy_next_upstream error timeout http_502 non_idempotent;"
  echo "    }"
  echo "  }"
  echo "}"
} >"$dir/nginx/nginx.conf"
"$nginx" -p "$dir/nginx" -c "$dir/nginx/nginx.conf" -g 'daemon off;' 2>"$dir/nginx/stderr.log" &
nginx_pid=$!
for _ in $(seq 1 50); do
  curl -fsS "http://127.0.0.1:$lb_port/healthz" >/dev/null 2>&1 && break
  sleep 0.1
done
echo "cluster-demo: nginx on http://127.0.0.1:$lb_port"

# A message through whichever node nginx picks; its answer printed.
say() {  # $1: chat, $2: turn
  curl -fsS --max-time 60 -H "Authorization: Bearer $alice" -H "Idempotency-Key: chat-$1-turn-$2" \
       -d '{"agent":"calculator","content":"What is 12.5 * 8 + 3?"}' \
       "http://127.0.0.1:$lb_port/v1/conversations/web/chat-$1/messages" |
    python3 -c 'import json,sys; r=json.load(sys.stdin); print(sys.argv[1], repr(r["answer"]), "thread", r["thread_id"])' \
      "chat-$1 turn $2:"
}

# Two messages in each of four conversations, each through whichever node nginx picks.
for chat in 1 2 3 4; do
  for turn in 1 2; do say "$chat" "$turn"; done
done
echo "cluster-demo: one streamed through nginx:"
curl -fsSN -H "Authorization: Bearer $alice" -H 'Accept: text/event-stream' \
     -d '{"agent":"calculator","content":"What is 12.5 * 8 + 3?"}' \
     "http://127.0.0.1:$lb_port/v1/conversations/web/chat-5/messages" | grep '^event:' | tr '\n' ' '
echo
curl -fsS -H "Authorization: Bearer $alice" "http://127.0.0.1:$lb_port/v1/conversations" |
  python3 -c 'import json,sys; print("cluster-demo:", len(json.load(sys.stdin)["data"]), "conversations listed through nginx")'

"$troupe" cluster status --cluster "$database"
for n in 1 2 3; do
  echo "node-$n:"
  curl -fsS -H "Authorization: Bearer $metrics_key" "http://127.0.0.1:${http_ports[$((n - 1))]}/metrics" |
    grep -E '^troupe_cluster_(shards_held|asks_total)' | sed 's/^/  /'
done

# The node holding the agent's shard (shard_of: FNV-1a of the id, modulo
# the shard count) dies; the conversations go on through the survivors.
# The shard may be between holders at this moment (given up by one node,
# not yet taken by the next): the holder is read until there is one.
holder=None
for _ in $(seq 1 100); do
  holder=$("$troupe" cluster status --cluster "$database" --json | python3 -c '
import json, sys
status = json.load(sys.stdin)
h = 14695981039346656037
for byte in b"calculator":
    h = ((h ^ byte) * 1099511628211) % 2**64
print(next(s["holder"] for s in status["shard_table"] if s["shard"] == h % status["shards"]))')
  [ "$holder" != None ] && break
  sleep 0.1
done
[ "$holder" != None ] || { echo "cluster-demo: no node took the calculator's shard within 10 s" >&2; exit 1; }
victim=${holder#node-}
echo "cluster-demo: SIGKILL to $holder, which holds the calculator's shard"
kill -KILL "${pids[$((victim - 1))]}"
wait "${pids[$((victim - 1))]}" 2>/dev/null || true
unset "pids[$((victim - 1))]"
for chat in 1 2 3 4; do say "$chat" 3; done
"$troupe" cluster status --cluster "$database"

if [ -n "${KEEP:-}" ]; then
  echo "cluster-demo: running; nginx on http://127.0.0.1:$lb_port. Enter stops it."
  read -r
fi
echo "cluster-demo: SIGTERM to every node (each leaves the cluster)"
