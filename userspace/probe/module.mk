# probe: non-blocking libmysqlclient health probes driven by the evloop.
PROBE_OBJS  := $(BUILD)/obj/userspace/probe/probe.o
DAEMON_OBJS += $(PROBE_OBJS)
