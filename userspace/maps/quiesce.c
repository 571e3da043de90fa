/*
 * quiesce.c - see quiesce.h.
 */
#include "maps/quiesce.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>

int quiesce_init(struct quiesce *q, char *err, size_t errlen)
{
	LIBBPF_OPTS(bpf_map_create_opts, o);

	q->outer = -1;
	q->inner = bpf_map_create(BPF_MAP_TYPE_ARRAY, "ms_quiesce_in", 4, 4, 1, NULL);
	if (q->inner >= 0) {
		o.inner_map_fd = q->inner;
		q->outer = bpf_map_create(BPF_MAP_TYPE_ARRAY_OF_MAPS, "ms_quiesce", 4, 4, 1, &o);
	}
	if (q->outer < 0) {
		snprintf(err, errlen, "create the map-in-map that waits for BPF programs: %s",
		         strerror(errno));
		quiesce_free(q);
		return -1;
	}
	return 0;
}

int quiesce_wait(const struct quiesce *q)
{
	__u32 zero = 0;

	return bpf_map_update_elem(q->outer, &zero, &q->inner, BPF_ANY) ? -1 : 0;
}

void quiesce_free(struct quiesce *q)
{
	if (q->outer >= 0)
		close(q->outer);
	if (q->inner >= 0)
		close(q->inner);
	q->outer = q->inner = -1;
}
