# cluster_lib.sh - three mysteerd "hosts" and their etcd forwarders, for
# cluster.sh and cluster_views.sh (docs/CLUSTER.md). Sourced after lib.sh's
# itest_init and etcd_lib.sh, with LEASE_MS and FENCE_MS set.
#
# The hosts run in the test's network namespace with their own admin socket,
# state file, bpffs pin dir, cgroup ($ITEST_CGROUP/hN: `mysteerctl exec`
# runs a client there), 6450 address (127.0.0.1N) and no sk_lookup or
# metrics listener. Each host reaches the etcd members through socat
# forwarders of its own (one per member, one process group per host), so a
# host is cut from etcd by stopping its forwarders (SIGSTOP: connections
# hang, as behind a partition) and restored with SIGCONT.
#
#   DBPORT[h.n]    the port host h reaches backend dbn at (default $Pn)
#   CLUSTER_EXTRA  more lines for every host's [cluster] section
#   CLUSTER_EXTRA_h  more lines for host h's
HOSTS=${HOSTS:-1 2 3}
declare -A HPID FWD skip DBPORT DBFWD

fwd_port() { echo $((24000 + $1 * 10 + $2)); } # host member
fwd_endpoints() { # host
	local m out=
	for m in 1 2 3; do out+="${out:+, }http://127.0.0.1:$(fwd_port "$1" "$m")"; done
	echo "$out"
}
fwd_start() { # host: its forwarders to the etcd members, a process group of its own
	local m cmd=
	for m in 1 2 3; do
		cmd+="socat TCP-LISTEN:$(fwd_port "$1" "$m"),bind=127.0.0.1,reuseaddr,fork TCP:127.0.0.1:$(etcd_client_port "$m") & "
	done
	setsid bash -c "$cmd wait" &
	FWD[$1]=$!
}
fwd_signal() { kill -"$2" -- -"${FWD[$1]}" 2>/dev/null; }
dbfwd_start() { # host n port: host reaches backend dbn at 127.0.0.1:port, through socat
	# (a process group of its own: its children carry the open connections)
	setsid socat TCP-LISTEN:"$3",bind=127.0.0.1,reuseaddr,fork TCP:127.0.0.1:"$(eval echo "\$P$2")" &
	DBFWD[$1.$2]=$!
	DBPORT[$1.$2]=$3
}
# SIGSTOP: the listening socket still completes handshakes, nothing answers
# (a black hole, as behind a partition); SIGCONT restores it.
dbfwd_signal() { kill -"$3" -- -"${DBFWD[$1.$2]}" 2>/dev/null; }
cleanup_fwd() {
	local h k
	for k in "${!DBFWD[@]}"; do
		kill -CONT -- -"${DBFWD[$k]}" 2>/dev/null
		kill -TERM -- -"${DBFWD[$k]}" 2>/dev/null && wait "${DBFWD[$k]}" 2>/dev/null
	done
	for h in $HOSTS; do
		[ -n "${FWD[$h]:-}" ] || continue
		fwd_signal "$h" CONT
		fwd_signal "$h" TERM
		wait "${FWD[$h]}" 2>/dev/null
	done
	for h in $HOSTS; do
		[ -n "${HPID[$h]:-}" ] && kill -TERM "${HPID[$h]}" 2>/dev/null && wait "${HPID[$h]}" 2>/dev/null
	done
	for h in $HOSTS; do rmdir "$ITEST_CGROUP/h$h" 2>/dev/null; done
}
trap 'rc=$?; cleanup_fwd; (exit $rc); itest_cleanup' EXIT

host_conf() { # host
	local h=$1 d=$T/h$1 extra=CLUSTER_EXTRA_$1
	mkdir -p "$d" "$ITEST_CGROUP/h$h"
	cat >"$d/mysteer.conf" <<CONF
[mysteerd]
admin_socket = $d/admin.sock
state_file = $d/state
bpffs_dir = /sys/fs/bpf/mysteer-h$h
metrics_listen =
log_level = info

[probe]
interval_ms = 200
timeout_ms = 500
user = mysteer
password = mysteer

[steer]
cgroup = $ITEST_CGROUP/h$h
lookup = off

[proxy]
bind = 127.0.0.1$h

[cluster]
etcd = $(fwd_endpoints "$h")
name = itest
host_id = host$h
lease_ms = $LEASE_MS
fence_after_ms = $FENCE_MS
${CLUSTER_EXTRA:-}
${!extra:-}

[user:app]
password = app

[backend:db1]
host = 127.0.0.1
port = ${DBPORT[$h.1]:-$P1}
priority = 100
[backend:db2]
host = 127.0.0.1
port = ${DBPORT[$h.2]:-$P2}
priority = 200
[backend:db3]
host = 127.0.0.1
port = ${DBPORT[$h.3]:-$P3}
priority = 300
CONF
	chmod 600 "$d/mysteer.conf"
}

hctl() { "$MYSTEERCTL" --socket "$T/h$1/admin.sock" "${@:2}"; }
host_start() { # host
	"$MYSTEERD" -c "$T/h$1/mysteer.conf" -f >>"$T/h$1/log" 2>&1 &
	HPID[$1]=$!
	if ! wait_until 30 hctl "$1" status >/dev/null; then
		echo "not ok - host$1 did not answer on its admin socket"
		tail -n 30 "$T/h$1/log"
		return 1
	fi
}
host_kill() { kill -KILL "${HPID[$1]}" 2>/dev/null; wait "${HPID[$1]}" 2>/dev/null; HPID[$1]=; }

cj() { # host python-expression-on-c (the status' cluster object)
	hctl "$1" --json status 2>/dev/null |
		python3 -c "import json,sys; d=json.load(sys.stdin); c=d.get('cluster') or {}; print($2)"
}
# The predicates polled read the text status (no python per poll: on a
# loaded machine that is most of a poll's time).
st() { hctl "$1" status 2>/dev/null; }
is_leader() { st "$1" | grep -q '^cluster: .*; this host [^,]*, leader$'; }
fenced() { st "$1" | grep -q '^FENCED: '; }
steers() { # host writer: the host's own snapshot has that writer and is not fenced
	local out
	out=$(st "$1") || return 1
	grep -qx "writer: $2" <<<"$out" && ! grep -q '^FENCED: ' <<<"$out"
}
all_steer() { local h; for h in $HOSTS; do steers "$h" "$1" || return 1; done; }
leaders() { local h n=0; for h in $HOSTS; do [ -n "${HPID[$h]:-}" ] && is_leader "$h" && n=$((n + 1)); done; echo $n; }
one_leader_of() { # hosts...: exactly one of them leads
	local h n=0; for h in "$@"; do is_leader "$h" && n=$((n + 1)); done; [ $n -eq 1 ]
}
leader_host() { local h; for h in $HOSTS; do [ -n "${HPID[$h]:-}" ] && is_leader "$h" && { echo "$h"; return; }; done; }
rw_port() { # host: where 6446 lands for a client in the host's cgroup
	hctl "$1" exec -- mariadb --no-defaults -h 127.0.0.1 -P 6446 -u app -papp \
		--connect-timeout=3 -N -B -e 'SELECT @@port' 2>&1
}
# ms since the epoch of the first line matching pattern in host's log after
# line skip (the daemon's own clock: what polling adds is left out).
log_ms() { # host skip pattern
	local l
	l=$(tail -n +$(($2 + 1)) "$T/h$1/log" | grep -m1 -- "$3" | cut -c1-23)
	[ -n "$l" ] && date -d "$l" +%s%3N
}
loglen() { wc -l <"$T/h$1/log"; }
split() { # host query: through the host's 6450
	mariadb --no-defaults -h "127.0.0.1$1" -P 6450 -u app -papp --connect-timeout=5 -N -B -e "$2" 2>&1
}

