// SPDX-License-Identifier: GPL-2.0
/*
 * steer_sockops.bpf.c - accounting of steered client connections: active
 * connections per backend (used by least_conn and `mysteerctl status`) and
 * immediate connect-failure reports through the ring buffer, so the
 * controller re-probes the backend at once instead of at the next interval.
 *
 * Only sockets marked by connect4/6 count: the daemon's own probes and pools
 * are not steered and so never marked.
 */
#include "maps.bpf.h"

#define MS_TCP_SYN_SENT 2
#define MS_TCP_CLOSE    7

char LICENSE[] SEC("license") = "GPL";

static __always_inline void ms_report_failure(struct ms_sk_mark *mark, __u32 old_state)
{
	struct ms_path_counters *c =
	    ms_path_counters_get(mark->backend_id, mark->route_id, MS_PATH_CONNECT);
	struct ms_event *ev;

	if (c)
		__sync_fetch_and_add(&c->connect_failures, 1);
	ev = bpf_ringbuf_reserve(&steer_events, sizeof(*ev), 0);
	if (!ev)
		return;
	ev->type = MS_EV_CONNECT_FAIL;
	ev->backend_id = mark->backend_id;
	ev->route_id = mark->route_id;
	ev->err = (__s32)old_state;
	ev->ts_ns = bpf_ktime_get_ns();
	bpf_ringbuf_submit(ev, 0);
}

static __always_inline void ms_state_change(struct ms_sk_mark *mark, __u32 old_state,
                                            __u32 new_state)
{
	struct ms_path_counters *pc;
	struct ms_counters *c;

	if (new_state != MS_TCP_CLOSE)
		return;
	if (mark->flags & MS_SK_ESTABLISHED) {
		mark->flags &= ~MS_SK_ESTABLISHED;
		c = ms_counters_get(mark->backend_id);
		if (c)
			__sync_fetch_and_sub(&c->active, 1);
		pc = ms_path_counters_get(mark->backend_id, mark->route_id, MS_PATH_CONNECT);
		if (pc)
			__sync_fetch_and_sub(&pc->active, 1);
		return;
	}
	if (old_state == MS_TCP_SYN_SENT && !(mark->flags & MS_SK_FAILED)) {
		mark->flags |= MS_SK_FAILED;
		ms_report_failure(mark, old_state);
	}
}

SEC("sockops")
int ms_sockops(struct bpf_sock_ops *skops)
{
	struct ms_sk_mark *mark;
	struct ms_path_counters *pc;
	struct ms_counters *c;
	struct ms_cfg *cfg;
	struct bpf_sock *sk;

	switch (skops->op) {
	case BPF_SOCK_OPS_TCP_CONNECT_CB:
	case BPF_SOCK_OPS_ACTIVE_ESTABLISHED_CB:
	case BPF_SOCK_OPS_STATE_CB:
		break;
	default:
		return 1;
	}
	cfg = ms_cfg_get();
	if (!cfg || bpf_get_netns_cookie(skops) != cfg->netns_cookie)
		return 1;
	sk = skops->sk;
	if (!sk)
		return 1;
	mark = bpf_sk_storage_get(&sk_mark, sk, 0, 0);
	if (!mark || !(mark->flags & MS_SK_STEERED) || mark->backend_id >= MS_MAX_BACKENDS)
		return 1;

	switch (skops->op) {
	case BPF_SOCK_OPS_TCP_CONNECT_CB:
		/* Follow this socket's states: failure and close. */
		bpf_sock_ops_cb_flags_set(skops, skops->bpf_sock_ops_cb_flags |
		                                     BPF_SOCK_OPS_STATE_CB_FLAG);
		break;
	case BPF_SOCK_OPS_ACTIVE_ESTABLISHED_CB:
		if (mark->flags & MS_SK_ESTABLISHED)
			break;
		mark->flags |= MS_SK_ESTABLISHED;
		c = ms_counters_get(mark->backend_id);
		if (c)
			__sync_fetch_and_add(&c->active, 1);
		pc = ms_path_counters_get(mark->backend_id, mark->route_id, MS_PATH_CONNECT);
		if (pc)
			__sync_fetch_and_add(&pc->active, 1);
		break;
	case BPF_SOCK_OPS_STATE_CB:
		ms_state_change(mark, skops->args[0], skops->args[1]);
		break;
	}
	return 1;
}
