#!/usr/bin/env bash
# etcd_client.sh - the etcd client of the cluster module
# (userspace/cluster/etcd.c) against a real etcd on loopback in the test's
# network namespace: kv range and txn, a lease and its keepalive, the watch
# and its restart, endpoints that cannot be reached (tests/integration/etcd_client.c).
. "$(dirname "$0")/lib.sh"
itest_init etcd_client
. "$(dirname "$0")/etcd_lib.sh"

etcd_up 1 || exit 1
out=$("$ITEST_BUILD/tests/etcd_client" "http://127.0.0.1:$(etcd_client_port 1)" 2>&1)
rc=$?
echo "$out"
check "etcd_client exits 0" [ $rc -eq 0 ]
itest_done
