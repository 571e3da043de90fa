# metrics: the daemon's HTTP endpoint for the metrics registry
# (common/metrics.h): /metrics, /live, /ready, served by libmicrohttpd; and the
# daemon's own process figures. mysteer_version.h holds `git describe` of the
# tree built, rewritten only when it changes.
DAEMON_OBJS += $(BUILD)/obj/userspace/metrics/process.o

MYSTEER_VERSION := $(shell git describe --always --dirty 2>/dev/null || echo unknown)
$(BUILD)/gen/mysteer_version.h: FORCE
	@mkdir -p $(dir $@)
	@v='#define MYSTEER_VERSION "$(MYSTEER_VERSION)"'; \
	 [ "$$(cat $@ 2>/dev/null)" = "$$v" ] || echo "$$v" >$@
$(BUILD)/obj/userspace/metrics/process.o: $(BUILD)/gen/mysteer_version.h
.PHONY: FORCE
FORCE:
DAEMON_OBJS += $(BUILD)/obj/userspace/metrics/http.o

# The endpoint against a real Prometheus server (promtool, prometheus).
INTEG_TESTS += tests/integration/metrics.sh
