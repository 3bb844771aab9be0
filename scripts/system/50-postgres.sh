#!/usr/bin/env bash
# A throwaway PostgreSQL for the recording tests (idempotent; run as root by setup-system).
# Listens on 127.0.0.1:${OPENENV_PG_PORT:-55432} only; role "openenv" (password "openenv") may
# create databases; the tests connect to postgresql://openenv:openenv@127.0.0.1:55432/openenv_test.
set -euo pipefail
PORT=${OPENENV_PG_PORT:-55432}
DATA=${OPENENV_PG_DATA:-/var/lib/openenv-test-pg}

if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
fi
BIN=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)
as_pg() { runuser -u postgres -- "$@"; }

if ! "$BIN/pg_isready" -q -h 127.0.0.1 -p "$PORT"; then
    if [ ! -f "$DATA/PG_VERSION" ]; then
        rm -rf "$DATA"
        install -d -o postgres -g postgres -m 700 "$DATA"
        as_pg "$BIN/initdb" -D "$DATA" -U postgres --auth-local=trust --auth-host=scram-sha-256 \
            --no-sync -E UTF8 >/dev/null
    fi
    if [ -f "$DATA/postmaster.pid" ]; then
        OLD=$(head -n 1 "$DATA/postmaster.pid")
        if [ "$(ps -p "$OLD" -o comm= 2>/dev/null)" != postgres ]; then
            rm -f "$DATA/postmaster.pid"   # left by a server that was killed (e.g. a machine restart)
        fi
    fi
    as_pg "$BIN/pg_ctl" -D "$DATA" -l "$DATA/server.log" -w -t 60 start \
        -o "-p $PORT -c listen_addresses=127.0.0.1 -k $DATA -c fsync=off -c max_connections=200" >/dev/null
fi

sql() { as_pg "$BIN/psql" -h "$DATA" -p "$PORT" -U postgres -d postgres -qtAX -v ON_ERROR_STOP=1 -c "$1"; }
if [ "$(sql "SELECT 1 FROM pg_roles WHERE rolname = 'openenv'")" != 1 ]; then
    sql "CREATE ROLE openenv LOGIN CREATEDB PASSWORD 'openenv'"
fi
if [ "$(sql "SELECT 1 FROM pg_database WHERE datname = 'openenv_test'")" != 1 ]; then
    sql "CREATE DATABASE openenv_test OWNER openenv"
fi
echo "postgres: ready on 127.0.0.1:$PORT (role openenv, database openenv_test)" >&2
