/*
 * cluster.h - many mysteerd hosts, one decision, through etcd
 * (docs/CLUSTER.md). With a [cluster] section, mysteerd:
 *
 *  - keeps a lease on etcd (lease_ms), renewed every third of it;
 *  - campaigns for /mysteer/<name>/leader with a transaction (create the key
 *    with the lease if it is absent); one host leads while its lease lives;
 *  - the leader decides the topology with the controller's own rules and
 *    publishes it as /mysteer/<name>/topology (JSON: an epoch that only
 *    grows, the leader, the writer, the readers, each backend's role, health
 *    and admin state), in a transaction that holds only while it still
 *    leads;
 *  - every host, the leader included, watches the prefix and steers by the
 *    newest topology it has seen (never by an older epoch): the controller's
 *    snapshot goes through cluster's filter before it is published, so maps,
 *    relay and 6450 follow the cluster's decision, not the host's own;
 *  - fencing: a host whose lease was not renewed for fence_after_ms, whose
 *    watch is down that long, that has no lease or no topology yet, steers
 *    no writes (no writer in its snapshot: 6446 refused, 6450 writes get an
 *    ERR naming why); reads go on to the last known readers. It steers
 *    writes again once etcd answers and a topology is known.
 *
 * Without [cluster] the service does nothing and the daemon decides alone.
 * Everything runs on the controller's loop; etcd is reached through
 * cluster/etcd.h, off the loop.
 */
#ifndef MYSTEER_CLUSTER_H
#define MYSTEER_CLUSTER_H

#include "common/service.h"

extern const struct service_ops cluster_service;

#endif
