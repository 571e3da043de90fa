# common: logging, event loop, topology snapshots, retry delays. Every program links these.
COMMON_OBJS := $(patsubst %.c,$(BUILD)/obj/%.o,$(wildcard userspace/common/*.c))

UNIT_TESTS += $(BUILD)/tests/test_log
$(BUILD)/tests/test_log: $(BUILD)/obj/tests/unit/test_log.o $(BUILD)/obj/userspace/common/log.o
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) $^ -o $@ $(CHECK_LIBS) $(LDLIBS)
