#!/usr/bin/env bash
# cluster_auth.sh - the fleet through an etcd with auth on (issue 20,
# docs/CLUSTER.md): [cluster] user/password get a token from
# /v3/auth/authenticate, sent in the Authorization header of every request
# and the watch. Two hosts with a user whose role may only touch
# /mysteer/itest/ elect a leader and steer writes; a host with a wrong
# password starts fenced and says why; a host without user/password too.
export SANDBOX_BASE_PORT=${SANDBOX_BASE_PORT:-6306}
. "$(dirname "$0")/lib.sh"
itest_init cluster_auth
. "$(dirname "$0")/etcd_lib.sh"

export ETCD_FLAGS="--heartbeat-interval 50 --election-timeout 500"
LEASE_MS=2000
FENCE_MS=2000
CLUSTER_EXTRA_1=$'user = mysteer\npassword = s3cret pass'
CLUSTER_EXTRA_2=$CLUSTER_EXTRA_1
CLUSTER_EXTRA_3=$'user = mysteer\npassword = wrong'
. "$(dirname "$0")/cluster_lib.sh"

itest_sandbox_up
etcd_up 3 || exit 1
ec() { ETCDCTL_API=3 etcdctl --endpoints="$(etcd_endpoints | tr -d ' ')" "$@"; }
{
	ec user add root --new-user-password=rootpw --interactive=false &&
		ec role add mysteer &&
		ec role grant-permission mysteer --prefix=true readwrite /mysteer/itest/ &&
		ec user add mysteer --new-user-password='s3cret pass' --interactive=false &&
		ec user grant-role mysteer mysteer &&
		ec auth enable
} >"$T/etcdctl.log" 2>&1 || { echo "not ok - etcd auth set up"; cat "$T/etcdctl.log"; exit 1; }
check "etcd refuses a request without a token" bash -c "! ETCDCTL_API=3 etcdctl --endpoints=http://127.0.0.1:$(etcd_client_port 1) get /mysteer/itest/leader >/dev/null 2>&1"
for h in $HOSTS; do host_conf "$h"; fwd_start "$h"; done

host_start 1 || exit 1
ms=$(wait_until 30 steers 1 db1)
check "host1 (user mysteer) leads and steers writes to db1" steers 1 db1
measured "host1 steering writes $ms ms after its admin socket answered (etcd auth on)"
host_start 2 || exit 1
ms=$(wait_until 30 steers 2 db1)
check "host2 (user mysteer) steers writes to db1" steers 2 db1
check_eq "one leader" 1 "$(leaders)"
check_eq "host2 sees host1 lead" host1 "$(cj 2 "c['leader']")"
check_eq "the leader key, read as user mysteer" host1 \
	"$(ec --user 'mysteer:s3cret pass' get --print-value-only /mysteer/itest/leader)"
check "host2 logs its user" grep -q "as user mysteer" "$T/h2/log"
check "host2: a statement through 6450" split 2 "DO 1"

host3_fenced() { # what: host3 started, fenced, and its reason matches pattern
	host_start 3 || exit 1
	sleep 3
	check "host3 ($1) is fenced" fenced 3
	why=$(cj 3 "c['fence_reason']")
	echo "# $why"
	check "... and says why: $2" grep -qi "$2" <<<"$why"
}
host3_fenced "wrong password" "authentication failed"
check "host3: no leader known" [ "$(cj 3 "c['leader']")" = None ]

host_kill 3
sed -i '/^user = \|^password = wrong/d' "$T/h3/mysteer.conf"
host3_fenced "no user, no password" "user name is empty"

# the token refused later (auth disabled and enabled again drops the tokens)
sk=$(loglen 1)
ec --user root:rootpw auth disable >/dev/null 2>&1 && ec --user root:rootpw auth enable >/dev/null 2>&1
check "etcd auth disabled and enabled again" [ $? -eq 0 ]
sleep 4
check "host1 still leads and steers writes (a new token when the old was refused)" steers 1 db1
check "host2 still steers writes" steers 2 db1
check "host1 was refused its old token and got a new one" grep -q "etcd: the auth token was refused (.*invalid auth token): authenticating again" <(tail -n +$((sk + 1)) "$T/h1/log")
check_eq "... without fencing its writes" 0 "$(tail -n +$((sk + 1)) "$T/h1/log" | grep -c 'writes fenced')"

for h in 1 2 3; do check "host$h: no crash" kill -0 "${HPID[$h]}"; done
itest_done
