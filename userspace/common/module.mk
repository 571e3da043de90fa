# common: logging, event loop, topology snapshots, retry delays. Every program links these.
COMMON_OBJS := $(patsubst %.c,$(BUILD)/obj/%.o,$(wildcard userspace/common/*.c))
