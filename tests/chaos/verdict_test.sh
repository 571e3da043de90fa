#!/usr/bin/env bash
# verdict_test.sh - the chaos verdict (tests/chaos/verdict.py) on fixed
# inputs: a clean run passes; an acknowledged write missing from the
# primary, a row executed on a server after mysteerd moved the writer away
# (not in flight), and a refused write that is present each fail it; a
# write sent before the writer changed and run just after is in flight,
# not misplaced; a failure listed with --known is reported, not failed.
set -u
V=$(dirname "$0")/verdict.py
T=$(mktemp -d /tmp/chaos-verdict.XXXXXX)
trap 'rm -rf "$T"' EXIT
pass=0 fail=0
ok() { if "$@"; then pass=$((pass + 1)); echo "ok - $D"; else fail=$((fail + 1)); echo "not ok - $D"; fi; }

# Times in microseconds; the log's clock is local time with milliseconds.
t0=$(date -d '2026-12-01 10:00:00' +%s)000000
us() { echo $((t0 + $1 * 1000)); } # ms after t0
logt() { date -d "@$(((t0 / 1000000) + $1 / 1000))" "+%Y-%m-%d %H:%M:%S.$(printf %03d $(($1 % 1000)))"; }
mk() { # writes a clean run into $T/$1
	local d=$T/$1
	mkdir -p "$d"
	{
		echo "$(logt 0) info: writer none -> db1"
		echo "$(logt 5000) warn: writer db1 -> none"
		echo "$(logt 6000) info: writer none -> db2"
	} >"$d/mysteerd-handoff.log"
	{
		echo "$(us 0),handoff,phase,0,start"
		echo "$(us 4000),handoff,kill_promote,1,start"
		echo "$(us 5900),handoff,kill_promote,1,promoted:db2"
		echo "$(us 9000),handoff,kill_promote,1,end"
		echo "$(us 10000),handoff,phase,0,end"
	} >"$d/events.csv"
	{
		echo "w,cs,persistent,100,1,$(us 1000),$(us 1001),ok,0,0"
		echo "w,cs,persistent,100,2,$(us 4999),$(us 5500),unknown,2013,0"
		echo "w,cs,persistent,100,3,$(us 5200),$(us 5201),connfail,2003,0"
		echo "w,cs,persistent,100,4,$(us 6100),$(us 6102),ok,0,0"
		echo "r,cs-ro,persistent,1,1,$(us 1000),$(us 1001),ok,0,3307"
	} >"$d/ledger-100.csv"
	printf '100\t1\t3306\t%s\t%s\n100\t4\t3307\t%s\t%s\n' "$(us 1000)" "$(us 1000)" \
		"$(us 6100)" "$(us 6101)" >"$d/rows.tsv"
}
run() { python3 "$V" --out "$T/$1" "${@:2}" >"$T/$1.out" 2>&1; }

mk clean
D="a clean run passes" ok run clean
D="the figures name the fault and the path" ok grep -q 'handoff  cs       kill_promote' "$T/clean.out"

mk lost
sed -i '/^100\t4\t/d' "$T/lost/rows.tsv"
D="an acknowledged write missing from the primary fails the verdict" ok bash -c "! python3 '$V' --out '$T/lost' >'$T/lost.out'"
D="... and is named (invariant lost: 1)" ok grep -q 'not ok - invariant lost: 1' "$T/lost.out"

mk misplaced
printf '100\t5\t3306\t%s\t%s\n' "$(us 5500)" "$(us 6500)" >>"$T/misplaced/rows.tsv"
D="a row run on db1 after the writer moved to db2 fails the verdict" ok bash -c "! python3 '$V' --out '$T/misplaced' >'$T/misplaced.out'"
D="... as misplaced" ok grep -q 'not ok - invariant misplaced: 1' "$T/misplaced.out"
mk old
printf '100\t5\t3306\t%s\t%s\n' "$(us 5500)" "$(us 6500)" >"$T/old/rows-handoff-partition-1.tsv"
D="a row found only on a dumped old primary counts too" ok bash -c "! python3 '$V' --out '$T/old' >'$T/old.out'"

mk inflight
printf '100\t2\t3306\t%s\t%s\n' "$(us 4999)" "$(us 5003)" >>"$T/inflight/rows.tsv"
D="a write sent while db1 was the writer and run just after is in flight, not misplaced" ok run inflight
D="... and is measured" ok grep -q 'in flight): 1' "$T/inflight.out"

mk phantom
printf '100\t3\t3307\t%s\t%s\n' "$(us 5200)" "$(us 6200)" >>"$T/phantom/rows.tsv"
D="a write that never got a connection but is present fails the verdict" ok bash -c "! python3 '$V' --out '$T/phantom' >'$T/phantom.out'"

D="--known turns a failure into a reported known failure" ok run lost --known lost
D="... named KNOWN FAILURE" ok grep -q 'KNOWN FAILURE' "$T/lost.out"

echo "# verdict_test: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
