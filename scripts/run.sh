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

cleanup() {
	trap - INT TERM EXIT
	if [ -n "$DAEMON_PID" ] && kill -0 "$DAEMON_PID" 2>/dev/null; then
		kill -TERM "$DAEMON_PID" 2>/dev/null || true
		wait "$DAEMON_PID" 2>/dev/null || true
	fi
	echo "run: stopping the sandbox" >&2
	scripts/sandbox.sh down || true
}
trap cleanup EXIT
trap 'exit 130' INT TERM

[ -x "$BUILD/mysteerd" ] || { echo "run: $BUILD/mysteerd missing (make first)" >&2; exit 1; }
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
Servers directly: primary 3306, replicas 3307 3308 (scripts/sandbox.sh status).
Ctrl-C stops the daemon and the sandbox.

EOF
wait "$DAEMON_PID"
