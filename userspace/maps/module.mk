# maps: the eBPF client-side steering service (steer_service), the map image
# builder and publisher, the "no target" error listeners, what an earlier
# daemon left (leftover.c), and maps_dump for `mysteerctl maps`.
# MAPS_DUMP_OBJS is what mysteerctl links (no skeletons).
MAPS_DUMP_OBJS := $(BUILD)/obj/userspace/maps/dump.o $(BUILD)/obj/userspace/maps/leftover.o
MAPS_OBJS := $(BUILD)/obj/userspace/maps/image.o $(BUILD)/obj/userspace/maps/errlisten.o \
	     $(BUILD)/obj/userspace/maps/steer.o $(BUILD)/obj/userspace/maps/quiesce.o \
	     $(BUILD)/obj/userspace/maps/sockdiag.o \
	     $(MAPS_DUMP_OBJS)
DAEMON_OBJS += $(MAPS_OBJS)

$(BUILD)/obj/userspace/maps/steer.o: $(BPF_SKELS)

UNIT_TESTS += $(BUILD)/tests/test_maps
$(BUILD)/tests/test_maps: $(BUILD)/obj/tests/unit/test_maps.o $(BUILD)/obj/userspace/maps/image.o \
		$(BUILD)/obj/userspace/maps/errlisten.o $(COMMON_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) $^ -o $@ $(CHECK_LIBS) $(LDLIBS)

# quiesce_wait() against a running program (bpf/test_quiesce.bpf.c).
UNIT_TESTS += $(BUILD)/tests/test_quiesce
$(BUILD)/obj/tests/unit/test_quiesce.o: $(BPF_SKELS)
$(BUILD)/tests/test_quiesce: $(BUILD)/obj/tests/unit/test_quiesce.o \
		$(BUILD)/obj/userspace/maps/quiesce.o $(COMMON_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) $^ -o $@ $(CHECK_LIBS) $(LDLIBS)

# The libmysqlclient client of tests/integration/steer_connect.sh.
BINS += $(BUILD)/tests/peer_check
$(BUILD)/tests/peer_check: $(BUILD)/obj/tests/integration/peer_check.o
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) $^ -o $@ $(LDLIBS)

INTEG_TESTS += tests/integration/steer_connect.sh tests/integration/steer_reload.sh \
	tests/integration/steer_leftovers.sh tests/integration/steer_ids.sh \
	tests/integration/steer_fallback.sh tests/integration/tls_passthrough.sh
