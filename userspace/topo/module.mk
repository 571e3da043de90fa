# topo: the topology rules (pure, unit-tested as a table) and the controller
# state that feeds probe results through them.
TOPO_RULES_OBJS := $(BUILD)/obj/userspace/topo/rules.o
DAEMON_OBJS     += $(TOPO_RULES_OBJS) $(BUILD)/obj/userspace/topo/controller.o \
                   $(BUILD)/obj/userspace/topo/resolver.o
UNIT_TESTS      += $(BUILD)/tests/test_topo $(BUILD)/tests/test_evloop

$(BUILD)/tests/test_topo: $(BUILD)/obj/tests/unit/test_topo.o $(TOPO_RULES_OBJS) $(COMMON_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) $^ $(CHECK_LIBS) $(LDLIBS) -o $@

$(BUILD)/tests/test_evloop: $(BUILD)/obj/tests/unit/test_evloop.o $(COMMON_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) $^ $(CHECK_LIBS) $(LDLIBS) -o $@

INTEG_TESTS += tests/integration/controller.sh
INTEG_TESTS += tests/integration/controller_figures.sh
INTEG_TESTS += tests/integration/dns.sh
INTEG_TESTS += tests/integration/writer_sticky.sh tests/integration/writer_blip.sh

UNIT_TESTS += $(BUILD)/tests/test_controller
$(BUILD)/tests/test_controller: $(BUILD)/obj/tests/unit/test_controller.o \
		$(BUILD)/obj/userspace/topo/controller.o $(BUILD)/obj/userspace/topo/resolver.o \
		$(TOPO_RULES_OBJS) $(PROBE_OBJS) $(COMMON_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) $^ $(CHECK_LIBS) $(LDLIBS) -o $@
