#!/usr/bin/env bash
# ctl_top.sh - `mysteerctl top` in a real terminal (tmux), against a real
# daemon with 6446 connects flowing by connect steering: the screen shows
# every backend with its role and state, the writer's steered-connection
# rate is not zero while connects flow, and "q" ends it with exit 0 and the
# terminal as it was.
. "$(dirname "$0")/lib.sh"
itest_init ctl_top

PEER=$ITEST_BUILD/tests/peer_check
incg() { bash -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$ITEST_CGROUP" "$@"; }
tm() { tmux -S "$T/tmux.sock" "$@"; }

itest_sandbox_up
itest_write_config "$T/mysteer.conf"
itest_daemon_start "$T/mysteer.conf" || exit 1
writer_is() { test "$(ctl_writer)" = "$1"; }
wait_until 15 writer_is db1 >/dev/null
check "db1 is the writer" writer_is db1

# Connects to 6446 for the whole test, a few a second.
itest_bg incg "$PEER" count 127.0.0.1 6446 100000 50 >"$T/count.out" 2>&1

# And 6450 statements, ten a second, on one session.
itest_bg bash -c 'for i in $(seq 1 900); do echo "SELECT 1;"; sleep 0.1; done |
	mariadb --no-defaults -h127.0.0.1 -P6450 -uapp -papp -N -B >/dev/null 2>&1'

tm new-session -d -s top -x 120 -y 30 \
	"$MYSTEERCTL --socket $T/admin.sock top; echo \"top exit \$?\"; stty -a | grep -o ' icanon '; sleep 30"
screen() { tm capture-pane -p -t top; }
shows() { screen | grep -qE "$1"; }
ms=$(wait_until 20 shows '^BACKEND +ROLE +STATE')
check "top draws its table (${ms} ms)" shows '^BACKEND +ROLE +STATE +LAG +ACTIVE +STEERED/s'
check "every backend is on the screen" bash -c "[ \$(tmux -S '$T/tmux.sock' capture-pane -p -t top | grep -cE '^db[123] +(writer|reader) +up ') -eq 3 ]"
# The rate needs two samples, and connects must have been steered between them.
steering() { screen | awk '$1 == "db1" && $6 != "-" && $6 + 0 > 0 {f = 1} END {exit !f}'; }
ms=$(wait_until 30 steering)
check "db1's STEERED/s is not zero while 6446 connects flow (${ms} ms)" steering
check "the header has STMT/s and P99" shows 'OPENED/s +STMT/s +P99$'
statements() { screen | awk '$1 ~ /^db/ && $11 != "-" && $11 + 0 > 0 && $12 ~ /ms$/ {f = 1} END {exit !f}'; }
ms=$(wait_until 30 statements)
check "a backend shows 6450 STMT/s and a P99 while statements flow (${ms} ms)" statements
measured "$(screen | grep -E '^(BACKEND|db[123])' | tr -s ' ' | tr '\n' '|')"
tm send-keys -t top q
ended() { shows '^top exit 0'; }
ms=$(wait_until 10 ended)
check "q ends top with exit 0 (${ms} ms)" ended
check "the terminal is back in canonical mode" shows '^ icanon *$'
tm kill-server

itest_done
