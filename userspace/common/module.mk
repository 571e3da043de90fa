# common: logging, event loop, topology snapshots, retry delays, the metrics registry. Every program links these.
COMMON_OBJS := $(patsubst %.c,$(BUILD)/obj/%.o,$(wildcard userspace/common/*.c))

UNIT_TESTS += $(BUILD)/tests/test_log
$(BUILD)/tests/test_log: $(BUILD)/obj/tests/unit/test_log.o $(BUILD)/obj/userspace/common/log.o
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) $^ -o $@ $(CHECK_LIBS) $(LDLIBS)

UNIT_TESTS += $(BUILD)/tests/test_metrics
$(BUILD)/tests/test_metrics: $(BUILD)/obj/tests/unit/test_metrics.o $(BUILD)/obj/userspace/common/metrics.o \
		$(BUILD)/obj/userspace/common/log.o
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) $^ -o $@ $(CHECK_LIBS) $(LDLIBS)
