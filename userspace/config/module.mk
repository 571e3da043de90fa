# config: the INI config (config.c) and the runtime state overlay (state.c).
# Linked into mysteerd, mysteerctl (to find admin_socket with -c) and tests.
CONFIG_OBJS := $(BUILD)/obj/userspace/config/config.o $(BUILD)/obj/userspace/config/state.o
DAEMON_OBJS += $(CONFIG_OBJS)

UNIT_TESTS += $(BUILD)/tests/test_config
$(BUILD)/tests/test_config: $(BUILD)/obj/tests/unit/test_config.o $(CONFIG_OBJS) \
		$(BUILD)/obj/userspace/common/log.o $(BUILD)/obj/userspace/common/io.o
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) $^ -o $@ $(CHECK_LIBS) $(LDLIBS)
