#!/usr/bin/env bash
# Test runner behind `make test`: runs unit test programs, fuzz targets for a
# fixed number of iterations, integration scripts and the ASan/UBSan unit build,
# and ends with one "tests: N passed, N failed" line. Exit 1 if anything failed.
set -u
cd "$(dirname "$0")/.."

unit="" fuzz="" integ="" asan=0 fuzz_runs=200000 vg="" fuzz_each="" fuzz_time="" corpus=""
while [ $# -gt 0 ]; do
	case "$1" in
	--unit) unit="$2"; shift 2 ;;
	--fuzz) fuzz="$2"; shift 2 ;;
	--fuzz-runs) fuzz_runs="$2"; shift 2 ;;
	# "name=N ...": runs for those targets instead of --fuzz-runs
	--fuzz-runs-each) fuzz_each="$2"; shift 2 ;;
	# a long run: each target for SECS, adding to a corpus kept in DIR/NAME
	--fuzz-time) fuzz_time="$2"; shift 2 ;;
	--corpus) corpus="$2"; shift 2 ;;
	--integ) integ="$2"; shift 2 ;;
	--asan) asan=1; shift ;;
	--valgrind) vg="$2"; shift 2 ;;
	*) echo "run.sh: unknown argument $1" >&2; exit 2 ;;
	esac
done

passed=0 failed=0 failures=()
record() { # name rc
	if [ "$2" -eq 0 ]; then passed=$((passed + 1)); echo "PASS $1"
	else failed=$((failed + 1)); failures+=("$1"); echo "FAIL $1 (exit $2)"; fi
}

logdir=${TEST_LOG_DIR:-${BUILD:-build}/test-logs}
mkdir -p "$logdir"

for t in $unit; do
	echo "== unit $t"
	# rc first: a command substitution in record's arguments would reset $?
	CK_FORK=yes "$t"
	rc=$?
	record "unit:$(basename "$t")" $rc
done

for t in $fuzz; do
	name=$(basename "$t")
	runs=$fuzz_runs
	for kv in $fuzz_each; do
		[ "${kv%%=*}" = "$name" ] && runs=${kv#*=}
	done
	seeds="tests/fuzz/seeds/${name#fuzz_}"
	if [ -n "$fuzz_time" ]; then
		# libFuzzer adds what it finds to the FIRST corpus dir: the kept one
		keep="${corpus:-.fuzz-corpus}/$name"
		mkdir -p "$keep" "$keep-crashes"
		echo "== fuzz $name (${fuzz_time} s, corpus $keep, crashes in $keep-crashes)"
		args=(-max_total_time="$fuzz_time" -max_len=4096 -rss_limit_mb=4096
		      -artifact_prefix="$keep-crashes/" "$keep")
	else
		echo "== fuzz $name ($runs runs)"
		# the scratch dir first, so the committed seeds stay as they are
		keep="$logdir/corpus-$name"
		rm -rf "$keep" && mkdir -p "$keep"
		args=(-runs="$runs" -max_len=4096 -rss_limit_mb=4096 "$keep")
	fi
	if [ -d "$seeds" ]; then args+=("$seeds"); fi
	start=$(date +%s)
	"$t" "${args[@]}" >"$logdir/$name.log" 2>&1; rc=$?
	tail -n 3 "$logdir/$name.log"
	echo "   ($(($(date +%s) - start)) s)"
	record "fuzz:$name" $rc
done

for t in $integ; do
	name=$(basename "$t" .sh)
	echo "== integration $name (log: $logdir/$name.log)"
	start=$(date +%s)
	bash "$t" >"$logdir/$name.log" 2>&1; rc=$?
	grep -E '^(ok|not ok|measured|#)' "$logdir/$name.log" | tail -n 60
	[ $rc -ne 0 ] && tail -n 40 "$logdir/$name.log"
	echo "   ($(($(date +%s) - start)) s)"
	record "integration:$name" $rc
done

# Unit tests under valgrind's memcheck, in one process (CK_FORK=no) so leaks
# are seen: any error or definite leak fails the run.
for t in $vg; do
	name=$(basename "$t")
	echo "== valgrind $name"
	CK_FORK=no valgrind -q --error-exitcode=9 --leak-check=full --errors-for-leak-kinds=definite \
		"$t" >"$logdir/valgrind-$name.log" 2>&1; rc=$?
	[ $rc -ne 0 ] && tail -n 30 "$logdir/valgrind-$name.log"
	record "valgrind:$name" $rc
done

if [ $asan -eq 1 ]; then
	echo "== asan: unit tests under AddressSanitizer/UBSan"
	make --no-print-directory asan >"$logdir/asan.log" 2>&1; rc=$?
	grep -E '^(PASS|FAIL|[0-9]+%)' "$logdir/asan.log" | tail -n 30
	[ $rc -ne 0 ] && tail -n 40 "$logdir/asan.log"
	record "asan" $rc
fi

[ $failed -gt 0 ] && printf 'failed: %s\n' "${failures[@]}"
echo "tests: $passed passed, $failed failed"
[ $failed -eq 0 ]
