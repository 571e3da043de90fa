# cluster: the fleet through etcd (docs/CLUSTER.md). etcd.c is the etcd v3
# client (gRPC-JSON gateway over libcurl, off the loop); cluster.c the
# election, the published topology, the views and fencing, as a service of
# mysteerd.
CLUSTER_ETCD_OBJS := $(BUILD)/obj/userspace/cluster/etcd.o
CLUSTER_VIEWS_OBJS := $(BUILD)/obj/userspace/cluster/views.o
DAEMON_OBJS       += $(CLUSTER_ETCD_OBJS) $(CLUSTER_VIEWS_OBJS) $(BUILD)/obj/userspace/cluster/cluster.o

# views.c: the hosts' views and the leader's verdict from them (pure).
UNIT_TESTS += $(BUILD)/tests/test_views
# (common/module.mk is read after this one: its objects are named here)
$(BUILD)/tests/test_views: $(BUILD)/obj/tests/unit/test_views.o $(CLUSTER_VIEWS_OBJS) \
		$(BUILD)/obj/userspace/common/topology.o $(BUILD)/obj/userspace/common/log.o
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) $^ $(CHECK_LIBS) $(LDLIBS) -o $@

# etcd_client: drives the client against a real etcd (etcd_client.sh).
BINS += $(BUILD)/tests/etcd_client
# (common/module.mk is read after this one: its objects are named here)
$(BUILD)/tests/etcd_client: $(BUILD)/obj/tests/integration/etcd_client.o $(CLUSTER_ETCD_OBJS) \
		$(BUILD)/obj/userspace/common/evloop.o $(BUILD)/obj/userspace/common/log.o
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) $^ -o $@ $(LDLIBS)

INTEG_TESTS += tests/integration/etcd_client.sh
INTEG_TESTS += tests/integration/cluster.sh tests/integration/cluster_views.sh \
	       tests/integration/cluster_auth.sh
