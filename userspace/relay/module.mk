# relay: the sk_lookup service (lookup_service) with local handoff, and the L4
# relay for remote backends / local_handoff = off. Linked into mysteerd.
RELAY_OBJS := $(BUILD)/obj/userspace/relay/relay.o

UNIT_TESTS += $(BUILD)/tests/test_relay
$(BUILD)/tests/test_relay: $(BUILD)/obj/tests/unit/test_relay.o $(RELAY_OBJS) $(COMMON_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) $^ -o $@ $(CHECK_LIBS) $(LDLIBS)

LOOKUP_OBJS := $(BUILD)/obj/userspace/relay/lookup.o $(BUILD)/obj/userspace/relay/handoff.o
DAEMON_OBJS += $(RELAY_OBJS) $(LOOKUP_OBJS)
$(BUILD)/obj/userspace/relay/lookup.o: $(BPF_SKELS)

UNIT_TESTS += $(BUILD)/tests/test_handoff
$(BUILD)/tests/test_handoff: $(BUILD)/obj/tests/unit/test_handoff.o \
		$(BUILD)/obj/userspace/relay/handoff.o $(COMMON_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) $^ -o $@ $(CHECK_LIBS) $(LDLIBS)
$(BUILD)/obj/tests/unit/test_handoff.o: $(BPF_SKELS)

# The relay data path benchmark (docs/BENCHMARKS.md, "Relay data path").
BINS += $(BUILD)/relay_bench
$(BUILD)/obj/tests/bench/relay_bench.o: $(BPF_SKELS)
$(BUILD)/relay_bench: $(BUILD)/obj/tests/bench/relay_bench.o $(RELAY_OBJS) $(COMMON_OBJS)
	$(CC) $(LDFLAGS) $^ -o $@ $(LDLIBS)
INTEG_TESTS += tests/integration/steer_lookup.sh tests/integration/lookup_demote.sh \
	tests/integration/relay_connect.sh tests/integration/lookup_owner.sh \
	tests/integration/relay_fds.sh
