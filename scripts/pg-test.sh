#!/usr/bin/env bash
# Throw-away PostgreSQL for the flag service's tests (test/flags/store-postgres.test.ts).
#   scripts/pg-test.sh start   installs PostgreSQL if needed (apt-get, needs root), creates a cluster in a
#                              temp dir on a free port, starts it, and prints shell lines to eval:
#                                export DATABASE_URL=postgres://postgres@127.0.0.1:PORT/postgres
#                                export PG_TEST_DIR=/tmp/flags-pg.XXXX
#   scripts/pg-test.sh stop [DIR]   stops that cluster and deletes DIR (default: $PG_TEST_DIR).
# Everything but the export lines goes to stderr, so `eval "$(scripts/pg-test.sh start)"` works.
# Nothing is cached: on a fresh machine it installs, on a prepared one it only starts a cluster.
set -euo pipefail

find_bin() {
  local d
  d=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)
  if [[ -n "$d" && -x "$d/initdb" ]]; then echo "$d"; fi
}

# Runs a PostgreSQL binary as the postgres user when we are root (initdb refuses root).
as_pg() {
  if [[ $(id -u) -eq 0 ]]; then runuser -u postgres -- "$@"; else "$@"; fi
}

start() {
  local bin
  bin=$(find_bin)
  if [[ -z "$bin" ]]; then
    if [[ $(id -u) -ne 0 ]]; then
      echo "pg-test: PostgreSQL is not installed and installing it needs root (apt-get install -y postgresql)" >&2
      exit 1
    fi
    echo "pg-test: installing PostgreSQL (apt-get)..." >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update >&2
    apt-get install -y --no-install-recommends postgresql >&2
    bin=$(find_bin)
    if [[ -z "$bin" ]]; then echo "pg-test: initdb still not found after installing postgresql" >&2; exit 1; fi
  fi
  local dir port
  dir=$(mktemp -d /tmp/flags-pg.XXXXXX)
  chmod 755 "$dir"
  if [[ $(id -u) -eq 0 ]]; then chown postgres:postgres "$dir"; fi
  port=$(node -e "const s=require('net').createServer();s.listen(0,'127.0.0.1',()=>{process.stdout.write(String(s.address().port));s.close()})")
  as_pg "$bin/initdb" -D "$dir/data" -U postgres -A trust -E UTF8 --no-sync >&2
  # fsync off: the cluster is thrown away after the run; durability is the store's, not this test's.
  as_pg "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
    -o "-p $port -k $dir -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c max_connections=200" start >&2
  echo "export DATABASE_URL=postgres://postgres@127.0.0.1:$port/postgres"
  echo "export PG_TEST_DIR=$dir"
}

stop() {
  local dir=${1:-${PG_TEST_DIR:-}}
  if [[ -z "$dir" || ! -d "$dir" ]]; then echo "pg-test: nothing to stop (no cluster dir given)" >&2; exit 0; fi
  local bin
  bin=$(find_bin)
  if [[ -n "$bin" && -f "$dir/data/postmaster.pid" ]]; then
    as_pg "$bin/pg_ctl" -D "$dir/data" -m immediate -w stop >&2 || true
  fi
  rm -rf "$dir"
}

case "${1:-}" in
  start) start ;;
  stop) stop "${2:-}" ;;
  *) echo "usage: $0 start | stop [DIR]" >&2; exit 2 ;;
esac
