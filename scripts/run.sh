#!/usr/bin/env bash
# run.sh - `make run`: the three-server sandbox and mysteerd with
# etc/mysteer.conf in the foreground. Ctrl-C stops the daemon (which removes
# what it attached) and then the sandbox, by PID.
set -euo pipefail
cd "$(dirname "$0")/.."

BUILD=${BUILD:-build}
CONF=${MYSTEER_CONF:-etc/mysteer.conf}
export SANDBOX_DIR=${SANDBOX_DIR:-/var/tmp/mysteer-sandbox}
DAEMON_PID=
moved=

cleanup() {
	trap - INT TERM EXIT
	if [ -n "$DAEMON_PID" ] && kill -0 "$DAEMON_PID" 2>/dev/null; then
		kill -TERM "$DAEMON_PID" 2>/dev/null || true
		wait "$DAEMON_PID" 2>/dev/null || true
	fi
	echo "run: stopping the sandbox" >&2
	scripts/sandbox.sh down || true
	[ -n "${moved:-}" ] && rm -f "$moved"
}
[ -x "$BUILD/mysteerd" ] || { echo "run: $BUILD/mysteerd missing (make first)" >&2; exit 1; }

# The sandbox's servers and the routes need their ports: say which one is
# taken (a MariaDB the host runs, say) and how to move the sandbox, before
# starting anything.
base=${SANDBOX_BASE_PORT:-3306}
routes=$(awk -F= '/^\[/ {r = ($0 ~ /^\[route:/)} r && $1 ~ /^port[ \t]*$/ {gsub(/[ \t]|;.*/, "", $2); print $2}' "$CONF")
taken=0
for port in "$base" $((base + 1)) $((base + 2)) $routes; do
	if [ -n "$(ss -H -ltn "sport = :$port" 2>/dev/null)" ]; then
		echo "run: port $port is taken: $(ss -H -ltnp "sport = :$port" | awk '{print $NF}' | head -n 1)" >&2
		taken=1
	fi
done
if [ $taken -eq 1 ]; then
	echo "run: move the sandbox with SANDBOX_BASE_PORT=N make run (servers on N..N+2), or the routes in $CONF" >&2
	exit 1
fi
trap cleanup EXIT
trap 'exit 130' INT TERM
# A moved sandbox: the config's backends follow it (3306-3308 -> base..base+2).
if [ "$base" != 3306 ]; then
	moved=$(mktemp /tmp/mysteer-run.XXXXXX.conf)
	awk -v b="$base" '/^\[/ {be = ($0 ~ /^\[backend:/)}
		be && /^port[ \t]*=/ {split($0, kv, "="); p = kv[2] + 0; if (p >= 3306 && p <= 3308) {print "port = " (b + p - 3306); next}}
		{print}' "$CONF" >"$moved"
	chmod 600 "$moved"
	CONF=$moved
fi
scripts/sandbox.sh up
# The config holds the probe password: keep it private, as mysteerd warns.
chmod go-rwx "$CONF" 2>/dev/null || true

"$BUILD/mysteerd" -c "$CONF" -f &
DAEMON_PID=$!

sock=$(awk -F= '/^admin_socket/ {gsub(/[ \t]|;.*/, "", $2); print $2}' "$CONF")
cat <<EOF

mysteer runs (daemon pid $DAEMON_PID, sandbox data in $SANDBOX_DIR). Connect with:
  mariadb -h 127.0.0.1 -P 6446 -u app -papp     # read-write: the writer
  mariadb -h 127.0.0.1 -P 6447 -u app -papp     # read-only: a live replica
  mariadb -h 127.0.0.1 -P 6450 -u app -papp     # automatic read/write split
  $BUILD/mysteerctl --socket ${sock:-/run/mysteer/admin.sock} status
  $BUILD/mysteerctl exec -- mariadb -h 127.0.0.1 -P 6446 -u app -papp   # steered in the kernel
Servers directly: primary $base, replicas $((base + 1)) $((base + 2)) (scripts/sandbox.sh status).
Ctrl-C stops the daemon and the sandbox.

EOF
wait "$DAEMON_PID"
