#!/usr/bin/env bash
# Runs a command beside a throwaway PostgreSQL server: initdb into a
# temporary directory, pg_ctl start on 127.0.0.1 (a free port, trust
# authentication), the command with TROUPE_TEST_POSTGRES set to the server's
# URI, then the server is stopped and its directory removed. With
# TROUPE_TEST_POSTGRES already set, the command runs against that server.
# When no server can be started the command still runs, without the
# variable and with TROUPE_POSTGRES_UNAVAILABLE saying why, and the
# PostgreSQL tests report themselves skipped.
set -uo pipefail

if [ -n "${TROUPE_TEST_POSTGRES:-}" ]; then exec "$@"; fi

# skip WHY COMMAND…: says why, then runs the command without a server.
skip() {
  echo "with-postgres: $1; the PostgreSQL tests will be skipped" >&2
  export TROUPE_POSTGRES_UNAVAILABLE="$1"
  shift
  exec "$@"
}

bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
[ -n "$bin" ] && [ -x "$bin/initdb" ] || { skip "no PostgreSQL server is installed" "$@"; }

# initdb refuses to run as root: run the server as the postgres user then.
as_server=()
if [ "$(id -u)" -eq 0 ]; then
  id postgres >/dev/null 2>&1 || { skip "running as root and there is no postgres user" "$@"; }
  as_server=(runuser -u postgres --)
fi

dir=$(mktemp -d /tmp/troupe-pg.XXXXXX)
[ "$(id -u)" -eq 0 ] && chown postgres "$dir"
port=55432
while (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; do port=$((port + 1)); done

stop() {
  (cd /tmp && "${as_server[@]}" "$bin/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null 2>&1)
  rm -rf "$dir"
}

if ! (cd /tmp && "${as_server[@]}" "$bin/initdb" -D "$dir/data" -U troupe --auth=trust -E UTF8 --no-sync \
        >"$dir/initdb.log" 2>&1); then
  cat "$dir/initdb.log" >&2
  rm -rf "$dir"
  skip "initdb failed" "$@"
fi
if ! (cd /tmp && "${as_server[@]}" "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
        -o "-c listen_addresses=127.0.0.1 -p $port -k $dir -c max_connections=300 ${TROUPE_POSTGRES_OPTIONS:-}" \
        start >/dev/null); then
  cat "$dir/server.log" >&2
  stop
  skip "the server did not start" "$@"
fi
trap stop EXIT
echo "with-postgres: PostgreSQL $("$bin/postgres" --version | awk '{print $3}') on 127.0.0.1:$port" >&2
TROUPE_TEST_POSTGRES="postgresql://troupe@127.0.0.1:$port/postgres" "$@"
