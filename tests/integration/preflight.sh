#!/usr/bin/env bash
# preflight.sh - `mysteerd --check -c FILE` against the real sandbox: every
# backend reachable and readable gives exit 0; a monitoring user without the
# grant to read replication status, or with a wrong password, is a failure
# (exit 1) named per backend; a backend that is down is a warning, and all of
# them down a failure. Nothing is attached or pinned by a check.
. "$(dirname "$0")/lib.sh"
itest_init preflight

itest_sandbox_up
itest_write_config "$T/ok.conf"
"$MYSTEERD" --check -c "$T/ok.conf" >"$T/ok.out" 2>&1
check_eq "all good: exit 0" 0 "$?"
sed 's/^/# /' "$T/ok.out"
check "one ok line per backend, with its role" \
	bash -c "[ \$(grep -cE '^ok +backend db[123] .*(writable|read_only)' '$T/ok.out') -eq 3 ]"
check "db2 is seen replicating" grep -qE '^ok +backend db2 .*read_only, replicating' "$T/ok.out"
check "the kernel features are named" grep -qE '^ok +sk_lookup steering: supported' "$T/ok.out"
# bpffs shows maps.debug and progs.debug of its own; anything else is a pin.
no_pins() { [ -z "$(ls -A /sys/fs/bpf | grep -vx 'maps.debug\|progs.debug')" ]; }
check "nothing was pinned by the check" no_pins

# A monitoring user that logs in but may not read replication status.
for p in "$P1" "$P2" "$P3"; do
	sql_root "$p" "CREATE USER IF NOT EXISTS 'nomon'@'%' IDENTIFIED BY 'nomon'"
done
sed -e 's/^user = mysteer$/user = nomon/' -e 's/^password = mysteer$/password = nomon/' \
	"$T/ok.conf" >"$T/nomon.conf"
chmod 600 "$T/nomon.conf"
"$MYSTEERD" --check -c "$T/nomon.conf" >"$T/nomon.out" 2>&1
check_eq "no grant to read replication status: exit 1" 1 "$?"
check "the failure names the grant" grep -qE '^FAIL +backend db1 .*grant SLAVE MONITOR' "$T/nomon.out"
measured "$(grep -m1 FAIL "$T/nomon.out")"

sed -e 's/^password = mysteer$/password = wrong/' "$T/ok.conf" >"$T/badpw.conf"
chmod 600 "$T/badpw.conf"
"$MYSTEERD" --check -c "$T/badpw.conf" >"$T/badpw.out" 2>&1
check_eq "wrong monitoring password: exit 1" 1 "$?"
check "it says the monitoring user cannot log in" \
	grep -qE '^FAIL +backend db2 .*cannot log in' "$T/badpw.out"

sb kill "$P3" >/dev/null
"$MYSTEERD" --check -c "$T/ok.conf" >"$T/down.out" 2>&1
check_eq "one backend down: a warning, exit 0" 0 "$?"
check "the down backend is a warning" grep -qE '^warn +backend db3 .*unreachable' "$T/down.out"
sb kill "$P1" >/dev/null
sb kill "$P2" >/dev/null
"$MYSTEERD" --check -c "$T/ok.conf" >"$T/alldown.out" 2>&1
check_eq "every backend down: exit 1" 1 "$?"
check "it says none is reachable" grep -q '^FAIL  backends: none reachable' "$T/alldown.out"

itest_done
