#!/usr/bin/env bash
# Runs a command next to a throwaway PostgreSQL: initdb into a temp dir, start it on 127.0.0.1 on a
# free port, create a role and a database, export BATON_TEST_DATABASE_URL, run the command, then
# stop the server and delete its files whatever the command did. Exits with the command's status.
#
#   scripts/with-postgres.sh npm test
#   scripts/with-postgres.sh npx vitest run test/store/Pg.test.ts
#
# Needs PostgreSQL's server binaries (initdb, pg_ctl; 14 or newer), found on PATH or in
# /usr/lib/postgresql/<version>/bin (Debian). Run as root, the server runs as the `postgres` user.
set -euo pipefail

if [ "$#" -eq 0 ]; then
  echo "usage: $0 COMMAND [ARGS...]" >&2
  exit 2
fi

bindir=""
if command -v initdb >/dev/null 2>&1 && command -v pg_ctl >/dev/null 2>&1; then
  bindir="$(dirname "$(readlink -f "$(command -v pg_ctl)" 2>/dev/null || command -v pg_ctl)")"
else
  for dir in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
    if [ -x "$dir/initdb" ] && [ -x "$dir/pg_ctl" ]; then bindir="$dir"; break; fi
  done
fi
if [ -z "$bindir" ]; then
  echo "$0: PostgreSQL's initdb and pg_ctl were not found (on Debian: apt-get install postgresql)" >&2
  exit 2
fi

as_server=()
if [ "$(id -u)" -eq 0 ]; then
  # initdb refuses to run as root.
  id postgres >/dev/null 2>&1 || { echo "$0: running as root needs a 'postgres' user" >&2; exit 2; }
  as_server=(runuser -u postgres --)
fi

data="$(mktemp -d "${TMPDIR:-/tmp}/baton-pg.XXXXXX")"
[ "${#as_server[@]}" -eq 0 ] || chown postgres "$data"
started=""
cleanup() {
  if [ -n "$started" ]; then "${as_server[@]}" "$bindir/pg_ctl" -D "$data/db" -m immediate -w stop >/dev/null 2>&1 || true; fi
  rm -rf "$data"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

port="$(node -e 'const s = require("node:net").createServer().listen(0, "127.0.0.1", () => { console.log(s.address().port); s.close() })')"
password="$(node -e 'console.log(require("node:crypto").randomBytes(12).toString("hex"))')"
printf '%s\n' "$password" >"$data/pwfile"
[ "${#as_server[@]}" -eq 0 ] || chown postgres "$data/pwfile"

# The superuser authenticates with a password over TCP, as the tests' role does; the socket lives
# in the temp dir so nothing else on the machine is touched.
"${as_server[@]}" "$bindir/initdb" -D "$data/db" -U postgres --pwfile="$data/pwfile" --auth=scram-sha-256 \
  -E UTF8 --no-sync >"$data/initdb.log" 2>&1 || { cat "$data/initdb.log" >&2; exit 1; }
"${as_server[@]}" "$bindir/pg_ctl" -D "$data/db" -l "$data/db/server.log" -w \
  -o "-p $port -k $data -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200" \
  start >/dev/null || { cat "$data/db/server.log" >&2; exit 1; }
started=yes

export PGPASSWORD="$password"
"$bindir/psql" -h 127.0.0.1 -p "$port" -U postgres -d postgres -v ON_ERROR_STOP=1 -q \
  -c "CREATE ROLE baton LOGIN PASSWORD '$password'" -c "CREATE DATABASE baton OWNER baton" >/dev/null
unset PGPASSWORD

export BATON_TEST_DATABASE_URL="postgres://baton:$password@127.0.0.1:$port/baton"
echo "$0: PostgreSQL $("$bindir/postgres" --version | awk '{print $3}') on 127.0.0.1:$port (BATON_TEST_DATABASE_URL set)" >&2
set +e
"$@"
status=$?
set -e
exit "$status"
