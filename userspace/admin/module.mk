# admin: the admin socket server inside mysteerd.
DAEMON_OBJS += $(BUILD)/obj/userspace/admin/admin.o $(BUILD)/obj/userspace/admin/traffic.o

UNIT_TESTS += $(BUILD)/tests/test_traffic
$(BUILD)/tests/test_traffic: $(BUILD)/obj/tests/unit/test_traffic.o $(BUILD)/obj/userspace/admin/traffic.o \
		$(BUILD)/obj/userspace/common/metrics.o $(BUILD)/obj/userspace/common/log.o
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) $^ -o $@ $(CHECK_LIBS) $(LDLIBS)
INTEG_TESTS += tests/integration/reload_keys.sh
