# relay: the sk_lookup service (lookup_service) with local handoff, and the L4
# relay for remote backends / local_handoff = off. Linked into mysteerd.
RELAY_OBJS := $(BUILD)/obj/userspace/relay/relay.o

UNIT_TESTS += $(BUILD)/tests/test_relay
$(BUILD)/tests/test_relay: $(BUILD)/obj/tests/unit/test_relay.o $(RELAY_OBJS) $(COMMON_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) $^ -o $@ $(CHECK_LIBS) $(LDLIBS)
