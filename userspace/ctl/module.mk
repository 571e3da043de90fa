# ctl: mysteerctl, the control CLI (admin socket client). It links the config
# (to find admin_socket with -c FILE), the log and io modules, maps_dump (`maps`) and
# leftover.c (`detach`), named by path: userspace/maps/module.mk is read after
# this one.
CTL_OBJS := $(BUILD)/obj/userspace/ctl/ctl.o $(BUILD)/obj/userspace/ctl/top.o $(CONFIG_OBJS) $(BUILD)/obj/userspace/common/log.o \
	    $(BUILD)/obj/userspace/common/io.o \
	    $(BUILD)/obj/userspace/maps/dump.o $(BUILD)/obj/userspace/maps/leftover.o

BINS += $(BUILD)/mysteerctl
$(BUILD)/mysteerctl: $(BUILD)/obj/userspace/ctl/main.o $(CTL_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) $^ -o $@ $(LDLIBS)

UNIT_TESTS += $(BUILD)/tests/test_ctl
$(BUILD)/tests/test_ctl: $(BUILD)/obj/tests/unit/test_ctl.o $(CTL_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) $^ -o $@ $(CHECK_LIBS) $(LDLIBS)

INTEG_TESTS += tests/integration/ctl.sh
INTEG_TESTS += tests/integration/ctl_top.sh
