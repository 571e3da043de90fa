#!/usr/bin/env bash
# reload_keys.sh - a reload that changes keys it cannot apply live says so:
# one log line per key (`reload: [proxy] workers changed, needs a restart
# (...)`), counted in mysteer_config_reload_keys_not_applied_total{section,
# key}; a live key changed with them (interval_ms) gets no line; the running
# daemon keeps the old value (the metrics endpoint stays where it was), and a
# second reload names the keys again, as they still differ from what runs.
# Runs in its own namespaces (lib.sh).
. "$(dirname "$0")/lib.sh"
itest_init reload_keys

itest_sandbox_up
ITEST_PROXY_EXTRA="workers = 2" itest_write_config "$T/mysteer.conf"
itest_daemon_start "$T/mysteer.conf" || exit 1
metric() { # the value of one series in /metrics (METRIC{labels})
	curl -s --max-time 10 http://127.0.0.1:9470/metrics | awk -v s="$1" '$1 == s {print $2}'
}
check_eq "no key reported before a reload" 0 "$(grep -c 'reload: \[' "$T/mysteerd.log")"

# Two restart-only keys and one live key change.
sed -i -e 's/^workers = 2$/workers = 3/' -e 's/^interval_ms = .*/interval_ms = 300/' \
	-e 's/^\[mysteerd\]$/[mysteerd]\nmetrics_listen = 127.0.0.1:9471/' "$T/mysteer.conf"
check "the reload is accepted" ctl reload
lines() { grep -o 'reload: \[.*' "$T/mysteerd.log"; }
lines | sed 's/^/# log: /'
check_eq "[proxy] workers: one line naming the key and why" 1 \
	"$(lines | grep -c '^reload: \[proxy\] workers changed, needs a restart (the proxy.s threads are started at start)$')"
check_eq "[mysteerd] metrics_listen: one line" 1 \
	"$(lines | grep -c '^reload: \[mysteerd\] metrics_listen changed, needs a restart (the metrics endpoint is bound at start)$')"
check_eq "no line for the live key interval_ms" 0 "$(lines | grep -c 'interval_ms')"
check_eq "nothing else reported" 2 "$(lines | wc -l)"
check_eq "the running endpoint stays on 9470" 200 \
	"$(curl -s -o /dev/null -w '%{http_code}' --max-time 10 http://127.0.0.1:9470/live)"
check_eq "mysteer_config_reload_keys_not_applied_total{section=\"proxy\",key=\"workers\"} 1" 1 \
	"$(metric 'mysteer_config_reload_keys_not_applied_total{section="proxy",key="workers"}')"
check_eq "mysteer_config_reloads_total{result=\"ok\"} 1" 1 \
	"$(metric 'mysteer_config_reloads_total{result="ok"}')"

# Again with the same file: the daemon still runs with the old values.
check "a second reload is accepted" ctl reload
check_eq "the second reload names workers again" 2 \
	"$(lines | grep -c '^reload: \[proxy\] workers changed')"
check_eq "and counts it" 2 \
	"$(metric 'mysteer_config_reload_keys_not_applied_total{section="proxy",key="workers"}')"

itest_daemon_stop TERM
check_eq "mysteerd stopped cleanly (exit 0)" 0 "$ITEST_DAEMON_RC"
itest_done
