# etcd_lib.sh - etcd servers for a test, after lib.sh's itest_init: on
# loopback inside the test's network namespace, data in $T, stopped by PID
# at exit (ITEST_PIDS).
#
#   etcd_up 1            one member, client URL http://127.0.0.1:$ETCD_PORT
#   etcd_up 3            three members (ports $ETCD_PORT, +10, +20)
#   etcd_stop N / etcd_start N   stop (SIGKILL) or start member N again
#   etcd_leader          the member that is raft leader now (1..N)
#   ETCD_FLAGS           more flags for every member (e.g. election timing)
ETCD_PORT=${ETCD_PORT:-23790}
ETCD_N=0
declare -A ETCD_PID

etcd_client_port() { echo $((ETCD_PORT + ($1 - 1) * 10)); }
etcd_endpoints() { # comma list of the client URLs
	local i out=
	for i in $(seq 1 "$ETCD_N"); do out+="${out:+, }http://127.0.0.1:$(etcd_client_port "$i")"; done
	echo "$out"
}

etcd_start() { # member
	local i=$1 cp pp cluster= j
	cp=$(etcd_client_port "$i") pp=$((cp + 1))
	for j in $(seq 1 "$ETCD_N"); do
		cluster+="${cluster:+,}m$j=http://127.0.0.1:$(($(etcd_client_port "$j") + 1))"
	done
	mkdir -p "$T/etcd$i"
	etcd --name "m$i" --data-dir "$T/etcd$i/data" \
		--listen-client-urls "http://127.0.0.1:$cp" --advertise-client-urls "http://127.0.0.1:$cp" \
		--listen-peer-urls "http://127.0.0.1:$pp" --initial-advertise-peer-urls "http://127.0.0.1:$pp" \
		--initial-cluster "$cluster" --initial-cluster-state new \
		--initial-cluster-token "mysteer-itest" ${ETCD_FLAGS:-} \
		>>"$T/etcd$i/log" 2>&1 &
	ETCD_PID[$i]=$!
	ITEST_PIDS+=($!)
}

etcd_stop() { # member
	local pid=${ETCD_PID[$1]:-}
	[ -n "$pid" ] || return 0
	kill -KILL "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
	ETCD_PID[$1]=
}

etcd_leader() { # the member (1..N) that is raft leader now, as member 1.. see it
	local i st
	for i in $(seq 1 "$ETCD_N"); do
		[ -n "${ETCD_PID[$i]:-}" ] || continue
		st=$(curl -fsS -m 2 -X POST "http://127.0.0.1:$(etcd_client_port "$i")/v3/maintenance/status" -d '{}' 2>/dev/null) || continue
		python3 -c 'import json,sys; d=json.loads(sys.argv[1]); sys.exit(0 if d["leader"] == d["header"]["member_id"] else 1)' "$st" && { echo "$i"; return 0; }
	done
	return 1
}

etcd_healthy() { # member
	curl -fsS -m 1 "http://127.0.0.1:$(etcd_client_port "$1")/health" 2>/dev/null | grep -q '"true"'
}

etcd_up() { # members
	local i ms
	ETCD_N=$1
	for i in $(seq 1 "$ETCD_N"); do etcd_start "$i"; done
	for i in $(seq 1 "$ETCD_N"); do
		if ! ms=$(wait_until 30 etcd_healthy "$i"); then
			echo "not ok - etcd member $i did not become healthy"
			tail -n 20 "$T/etcd$i/log"
			return 1
		fi
	done
	measured "etcd ($ETCD_N member(s)) healthy in ${ms} ms"
}
