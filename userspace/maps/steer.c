/*
 * steer.c - steer_service: loads the client-side steering programs
 * (connect4/6, getpeername4/6, sockops, the close-on-demote iterator), pins
 * maps and links under bpffs_dir, attaches to the steered cgroup through
 * bpf_link, and publishes every topology snapshot into the maps.
 *
 * Restart without a gap: maps and links are pinned, so a SIGKILL leaves
 * steering running with the last topology. The next daemon opens its
 * skeletons on the pinned maps, swaps its programs into the pinned links with
 * bpf_link__update_program (the hook is never empty), and keeps the
 * predecessor's route tables until its own probes decided every backend.
 *
 * service_ops carries no instance pointer, so this module owns exactly one
 * steering state (S), used only from the controller thread except for the
 * counters lookup, which only reads a map fd that is fixed while running.
 */
#define _GNU_SOURCE
#include "maps/maps.h"

#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <linux/magic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "common/evloop.h"
#include "common/log.h"
#include "maps/errlisten.h"
#include "steer_connect.skel.h"
#include "steer_iter.skel.h"
#include "steer_sockops.skel.h"

#ifndef SO_NETNS_COOKIE
#define SO_NETNS_COOKIE 71
#endif

enum { L_CONNECT4, L_CONNECT6, L_GETPEER4, L_GETPEER6, L_SOCKOPS, L_COUNT };
static const char *const link_names[L_COUNT] = {
    "link_connect4", "link_connect6", "link_getpeername4", "link_getpeername6", "link_sockops",
};

struct steer {
	struct daemon_ctx *d;
	bool running, subscribed, adopted, made_cgroup;
	char cgroup[4096];
	char pin_dir[4096];
	int cgroup_fd;
	uint64_t cgroup_id, netns_cookie;
	struct steer_connect *conn;
	struct steer_sockops *ops;
	struct steer_iter *iter;
	struct bpf_link *links[L_COUNT];
	struct bpf_link *iter_link;
	struct ring_buffer *rb;
	struct errlisten *errl;
	const struct topology *last; /* the snapshot published last */
	uint64_t last_fail_log[MS_MAX_BACKENDS];
	int counters_fd;
};

static struct steer S = {.cgroup_fd = -1, .counters_fd = -1};

static int mkdir_p(const char *path, mode_t mode)
{
	char tmp[4096];

	if (snprintf(tmp, sizeof(tmp), "%s", path) >= (int)sizeof(tmp))
		return -1;
	for (char *p = tmp + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = 0;
		if (mkdir(tmp, mode) && errno != EEXIST)
			return -1;
		*p = '/';
	}
	return mkdir(tmp, mode) && errno != EEXIST ? -1 : 0;
}

/* bpffs is not mounted at boot on Debian: mount it, then make our folder. */
static int prepare_bpffs(const char *dir, char *err, size_t errlen)
{
	struct statfs st;

	if (statfs("/sys/fs/bpf", &st) || st.f_type != BPF_FS_MAGIC) {
		if (mount("bpf", "/sys/fs/bpf", "bpf", 0, NULL)) {
			snprintf(err, errlen, "mount bpffs at /sys/fs/bpf: %s", strerror(errno));
			return -1;
		}
		log_info("mounted bpffs at /sys/fs/bpf");
	}
	if (mkdir_p(dir, 0700)) {
		snprintf(err, errlen, "bpffs_dir %s: %s", dir, strerror(errno));
		return -1;
	}
	if (statfs(dir, &st) || st.f_type != BPF_FS_MAGIC) {
		snprintf(err, errlen, "bpffs_dir %s is not on a bpf filesystem", dir);
		return -1;
	}
	return 0;
}

/* The cgroup2 mount point, from /proc/mounts (hybrid hosts: .../unified). */
static int cgroup2_mount(char *out, size_t len)
{
	char line[8192], dev[256], mnt[4096], type[64];
	FILE *f = fopen("/proc/mounts", "r");
	int rc = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%255s %4095s %63s", dev, mnt, type) == 3 &&
		    strcmp(type, "cgroup2") == 0) {
			snprintf(out, len, "%s", mnt);
			rc = 0;
			break;
		}
	}
	fclose(f);
	return rc;
}

static uint64_t cgroup_id_of(const char *path)
{
	struct {
		struct file_handle fh;
		uint64_t id;
	} h = {.fh.handle_bytes = sizeof(uint64_t)};
	int mount_id;

	if (name_to_handle_at(AT_FDCWD, path, &h.fh, &mount_id, 0))
		return 0;
	return h.id;
}

static int prepare_cgroup(const char *want, char *err, size_t errlen)
{
	char mnt[4096];
	struct stat st;

	if (strcmp(want, "auto") == 0) {
		if (cgroup2_mount(mnt, sizeof(mnt))) {
			snprintf(err, errlen, "cgroup = auto: no cgroup2 mount in /proc/mounts");
			return -1;
		}
		snprintf(S.cgroup, sizeof(S.cgroup), "%.4080s/mysteer", mnt);
	} else {
		snprintf(S.cgroup, sizeof(S.cgroup), "%s", want);
	}
	if (stat(S.cgroup, &st)) {
		if (mkdir(S.cgroup, 0755)) {
			snprintf(err, errlen, "cgroup %s: %s", S.cgroup, strerror(errno));
			return -1;
		}
		S.made_cgroup = true;
	}
	S.cgroup_fd = open(S.cgroup, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	S.cgroup_id = cgroup_id_of(S.cgroup);
	if (S.cgroup_fd < 0 || !S.cgroup_id) {
		snprintf(err, errlen, "cgroup %s: %s", S.cgroup, strerror(errno));
		return -1;
	}
	return 0;
}

static uint64_t netns_cookie(void)
{
	uint64_t cookie = 0;
	socklen_t len = sizeof(cookie);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return 0;
	if (getsockopt(fd, SOL_SOCKET, SO_NETNS_COOKIE, &cookie, &len))
		cookie = 0;
	close(fd);
	return cookie;
}

#define OPEN_SKEL(type, dst)                                                                       \
	do {                                                                                       \
		LIBBPF_OPTS(bpf_object_open_opts, o, .pin_root_path = S.pin_dir);                  \
		dst = type##__open_opts(&o);                                                       \
		if (!dst || type##__load(dst)) {                                                   \
			snprintf(err, errlen, "load %s: %s (stale pins under %s?)", #type,         \
			         strerror(errno), S.pin_dir);                                      \
			return -1;                                                                 \
		}                                                                                  \
	} while (0)

static int load_objects(char *err, size_t errlen)
{
	OPEN_SKEL(steer_connect, S.conn);
	OPEN_SKEL(steer_sockops, S.ops);
	OPEN_SKEL(steer_iter, S.iter);
	S.counters_fd = bpf_map__fd(S.conn->maps.counters);
	return 0;
}

static uint64_t link_cgroup_id(struct bpf_link *l)
{
	struct bpf_link_info info;
	__u32 len = sizeof(info);

	memset(&info, 0, sizeof(info));
	if (bpf_obj_get_info_by_fd(bpf_link__fd(l), &info, &len) ||
	    info.type != BPF_LINK_TYPE_CGROUP)
		return 0;
	return info.cgroup.cgroup_id;
}

/*
 * Attach prog to our cgroup under the pinned link name, adopting a pinned
 * link of a predecessor: swapping the program in place keeps the hook filled.
 * A pinned link to another cgroup (config changed) is replaced after the new
 * one is attached.
 */
static struct bpf_link *attach_one(struct bpf_program *prog, const char *name, char *err,
                                   size_t errlen)
{
	char path[4200];
	struct bpf_link *old, *l;

	snprintf(path, sizeof(path), "%s/%s", S.pin_dir, name);
	old = access(path, F_OK) == 0 ? bpf_link__open(path) : NULL;
	if (old && link_cgroup_id(old) == S.cgroup_id && !bpf_link__update_program(old, prog)) {
		log_info("steer: adopted pinned %s", name);
		return old;
	}
	l = bpf_program__attach_cgroup(prog, S.cgroup_fd);
	if (!l) {
		snprintf(err, errlen, "attach %s to %s: %s", name, S.cgroup, strerror(errno));
		bpf_link__destroy(old);
		return NULL;
	}
	if (old) {
		log_warn("steer: replacing stale pinned %s", name);
		bpf_link__unpin(old);
		bpf_link__destroy(old);
	} else if (access(path, F_OK) == 0) {
		unlink(path); /* not a link we can open: stale */
	}
	if (bpf_link__pin(l, path)) {
		snprintf(err, errlen, "pin %s: %s", path, strerror(errno));
		bpf_link__destroy(l);
		return NULL;
	}
	return l;
}

static int attach_all(char *err, size_t errlen)
{
	struct bpf_program *progs[L_COUNT] = {
	    S.conn->progs.ms_connect4,     S.conn->progs.ms_connect6, S.conn->progs.ms_getpeername4,
	    S.conn->progs.ms_getpeername6, S.ops->progs.ms_sockops,
	};

	if (S.cgroup_fd < 0)
		return 0; /* maps only, for sk_lookup */
	for (int i = 0; i < L_COUNT; i++) {
		S.links[i] = attach_one(progs[i], link_names[i], err, errlen);
		if (!S.links[i])
			return -1;
	}
	S.iter_link = bpf_program__attach_iter(S.iter->progs.ms_close_iter, NULL);
	if (!S.iter_link) {
		snprintf(err, errlen, "attach tcp iterator: %s", strerror(errno));
		return -1;
	}
	return 0;
}

static int cfg_fd(void)
{
	return bpf_map__fd(S.conn->maps.steer_cfg);
}

/* Our netns, our error listeners; keeps a predecessor's ENABLED flag (and so
 * its route tables) until our first publish. */
static int init_cfg(const struct config *cfg, char *err, size_t errlen)
{
	struct ms_cfg c;
	__u32 zero = 0;

	memset(&c, 0, sizeof(c));
	if (bpf_map_lookup_elem(cfg_fd(), &zero, &c))
		memset(&c, 0, sizeof(c));
	S.adopted = (c.flags & MS_CFG_ENABLED) && c.netns_cookie == S.netns_cookie &&
	            c.abi_version == MS_ABI_VERSION;
	if (!S.adopted)
		c.flags = 0;
	c.netns_cookie = S.netns_cookie;
	c.abi_version = MS_ABI_VERSION;
	memset(c.errl, 0, sizeof(c.errl));
	memset(c.errl6, 0, sizeof(c.errl6));
	for (size_t r = 0; r < cfg->nroutes && r < MS_MAX_ROUTES; r++)
		errl_endpoint(S.errl, r, &c.errl[r]);
	if (bpf_map_update_elem(cfg_fd(), &zero, &c, BPF_ANY)) {
		snprintf(err, errlen, "write steer_cfg: %s", strerror(errno));
		return -1;
	}
	if (S.adopted)
		log_info("steer: adopted the pinned topology; keeping it until probes decide");
	return 0;
}

static void set_cfg_flags(bool enabled, bool least_conn)
{
	struct ms_cfg c;
	__u32 zero = 0;

	if (bpf_map_lookup_elem(cfg_fd(), &zero, &c))
		return;
	c.flags = (enabled ? MS_CFG_ENABLED : 0) | (least_conn ? MS_CFG_LEAST_CONN : 0);
	if (bpf_map_update_elem(cfg_fd(), &zero, &c, BPF_ANY))
		log_error("steer: write steer_cfg: %s", strerror(errno));
}

static bool cfg_enabled(void)
{
	struct ms_cfg c;
	__u32 zero = 0;

	return !bpf_map_lookup_elem(cfg_fd(), &zero, &c) && (c.flags & MS_CFG_ENABLED);
}

static bool any_unknown(const struct topology *t)
{
	for (size_t i = 0; i < t->nbackends; i++)
		if (t->backends[i].health == HEALTH_UNKNOWN &&
		    t->backends[i].admin != ADMIN_DISABLED)
			return true;
	return false;
}

static bool in_image(const struct maps_image *img, const struct ms_service_key *k)
{
	for (size_t i = 0; i < img->nservices; i++)
		if (memcmp(&img->services[i].key, k, sizeof(*k)) == 0)
			return true;
	return false;
}

/* Services that are no longer in the image, deleted after the flip. */
static void prune_services(const struct maps_image *img)
{
	int fd = bpf_map__fd(S.conn->maps.services);
	struct ms_service_key k, next, stale[MS_MAX_SERVICES];
	size_t n = 0;
	void *prev = NULL;

	while (n < MS_MAX_SERVICES && !bpf_map_get_next_key(fd, prev, &next)) {
		if (!in_image(img, &next))
			stale[n++] = next;
		k = next;
		prev = &k;
	}
	for (size_t i = 0; i < n; i++)
		bpf_map_delete_elem(fd, &stale[i]);
}

static int write_image(const struct maps_image *img)
{
	int be_fd = bpf_map__fd(S.conn->maps.backends);
	int rt_fd = bpf_map__fd(S.conn->maps.route_sel);
	int svc_fd = bpf_map__fd(S.conn->maps.services);
	int gen_fd = bpf_map__fd(S.conn->maps.active_gen);
	__u32 zero = 0, gen = 0, next;

	if (bpf_map_lookup_elem(gen_fd, &zero, &gen))
		gen = 0;
	next = (gen & 1) ^ 1;
	/* Present backends first (an id is reused only long after it left the
	 * topology, so an entry in use by
	 * the active generation keeps its address); removed ones after. */
	for (__u32 id = 0; id < MS_MAX_BACKENDS; id++)
		if ((img->backends[id].flags & MS_BE_PRESENT) &&
		    bpf_map_update_elem(be_fd, &id, &img->backends[id], BPF_ANY))
			return -1;
	for (__u32 r = 0; r < MS_MAX_ROUTES; r++) {
		__u32 idx = next * MS_MAX_ROUTES + r;
		if (bpf_map_update_elem(rt_fd, &idx, &img->routes[r], BPF_ANY))
			return -1;
	}
	for (size_t i = 0; i < img->nservices; i++)
		if (bpf_map_update_elem(svc_fd, &img->services[i].key, &img->services[i].val,
		                        BPF_ANY))
			return -1;
	if (bpf_map_update_elem(gen_fd, &zero, &next, BPF_ANY))
		return -1;
	prune_services(img);
	for (__u32 id = 0; id < MS_MAX_BACKENDS; id++)
		if (!(img->backends[id].flags & MS_BE_PRESENT))
			bpf_map_update_elem(be_fd, &id, &img->backends[id], BPF_ANY);
	return 0;
}

/* What a previous daemon left published: its backends and the active
 * generation's routes. */
static int read_image(struct maps_image *img)
{
	int be_fd = bpf_map__fd(S.conn->maps.backends);
	int rt_fd = bpf_map__fd(S.conn->maps.route_sel);
	int gen_fd = bpf_map__fd(S.conn->maps.active_gen);
	__u32 zero = 0, gen;

	memset(img, 0, sizeof(*img));
	if (bpf_map_lookup_elem(gen_fd, &zero, &gen))
		return -1;
	for (__u32 id = 0; id < MS_MAX_BACKENDS; id++)
		if (bpf_map_lookup_elem(be_fd, &id, &img->backends[id]))
			return -1;
	for (__u32 r = 0; r < MS_MAX_ROUTES; r++) {
		__u32 idx = (gen & 1) * MS_MAX_ROUTES + r;
		if (bpf_map_lookup_elem(rt_fd, &idx, &img->routes[r]))
			return -1;
	}
	img->nroutes = MS_MAX_ROUTES;
	return 0;
}

/* Runs the iterator once with this mask: destroys the matching sockets. */
static void close_on_demote(const uint32_t mask[MS_MAX_BACKENDS])
{
	char buf[64];
	int fd;
	uint64_t t0 = mono_us();

	memcpy(S.iter->bss->close_mask, mask, sizeof(S.iter->bss->close_mask));
	S.iter->bss->closed = 0;
	fd = bpf_iter_create(bpf_link__fd(S.iter_link));
	if (fd < 0) {
		log_error("close_on_demote: create iterator: %s", strerror(errno));
		return;
	}
	while (read(fd, buf, sizeof(buf)) > 0)
		;
	close(fd);
	log_info("close_on_demote: closed %llu steered connections in %llu us",
	         (unsigned long long)S.iter->bss->closed, (unsigned long long)(mono_us() - t0));
	memset(S.iter->bss->close_mask, 0, sizeof(S.iter->bss->close_mask));
}

static void publish(const struct topology *t, void *arg)
{
	const struct config *cfg = S.d ? S.d->cfg : NULL;
	struct maps_image *img, *adopted = NULL;
	uint32_t mask[MS_MAX_BACKENDS];
	bool closing;
	size_t nclose = 0;
	char err[160];

	if (!S.running || !cfg)
		return;
	if (S.adopted && any_unknown(t)) {
		log_debug("steer: generation %llu has unprobed backends; keeping the adopted maps",
		          (unsigned long long)t->generation);
		return;
	}
	closing = cfg->close_on_demote && S.iter_link;
	/* A failover while no daemon ran: what the predecessor steered to the
	 * old writer is known only from its maps, so read them before ours. */
	if (S.adopted && closing && !S.last) {
		adopted = malloc(sizeof(*adopted));
		if (!adopted || read_image(adopted)) {
			log_warn("steer: cannot read the adopted maps; connections steered before "
			         "the restart are not checked for close_on_demote");
			free(adopted);
			adopted = NULL;
		}
	}
	S.adopted = false;
	img = malloc(sizeof(*img));
	if (!img || maps_build_image(t, cfg, img, err, sizeof(err))) {
		log_error("steer: cannot publish generation %llu: %s",
		          (unsigned long long)t->generation, img ? err : "out of memory");
		free(img);
		free(adopted);
		return;
	}
	if (write_image(img)) {
		log_error("steer: write maps: %s", strerror(errno));
		free(img);
		free(adopted);
		return;
	}
	set_cfg_flags(true, cfg->reader_policy == READER_POLICY_LEAST_CONN);
	for (size_t r = 0; r < img->nroutes; r++)
		if (img->routes[r].ntargets == 0 && !(img->routes[r].flags & MS_RT_SPLIT))
			errl_set_reason(S.errl, r, img->reason[r]);
	log_debug("steer: published generation %llu", (unsigned long long)t->generation);

	if (closing && S.last)
		nclose = maps_close_mask(S.last, t, mask);
	else if (closing && adopted)
		nclose = maps_close_mask_adopted(adopted, t, img, mask);
	if (nclose)
		close_on_demote(mask);
	free(img);
	free(adopted);
	topo_put(S.last);
	S.last = topo_get(t);
}

static int on_event(void *ctx, void *data, size_t len)
{
	const struct ms_event *ev = data;
	uint64_t now = mono_ms();

	if (len < sizeof(*ev) || ev->type != MS_EV_CONNECT_FAIL ||
	    ev->backend_id >= MS_MAX_BACKENDS)
		return 0;
	if (now - S.last_fail_log[ev->backend_id] >= 1000) {
		S.last_fail_log[ev->backend_id] = now;
		log_info("steer: a steered connect to backend %u failed; probing it now",
		         ev->backend_id);
	}
	if (S.d && S.d->request_probe)
		S.d->request_probe(S.d, ev->backend_id);
	return 0;
}

static void on_ringbuf(struct evloop *l, int fd, unsigned events, void *arg)
{
	if (ring_buffer__consume(S.rb) < 0)
		log_warn("steer: ring buffer: %s", strerror(errno));
}

static int start_events(char *err, size_t errlen)
{
	S.rb = ring_buffer__new(bpf_map__fd(S.ops->maps.steer_events), on_event, NULL, NULL);
	if (!S.rb) {
		snprintf(err, errlen, "ring buffer: %s", strerror(errno));
		return -1;
	}
	if (S.d->loop &&
	    evloop_add_fd(S.d->loop, ring_buffer__epoll_fd(S.rb), EV_READ, on_ringbuf, NULL)) {
		snprintf(err, errlen, "ring buffer: evloop_add_fd failed");
		return -1;
	}
	/* Failures reported while no daemon ran: probe those backends too. */
	ring_buffer__consume(S.rb);
	return 0;
}

static void unpin_maps(void)
{
	static const char *const names[] = {
	    MS_MAP_SERVICES, MS_MAP_BACKENDS, MS_MAP_ROUTE_SEL, MS_MAP_ACTIVE_GEN, MS_MAP_COUNTERS,
	    MS_MAP_SOCKMAP,  MS_MAP_EVENTS,   MS_MAP_SK_MARK,   MS_MAP_CFG,
	};
	char path[4200];

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", S.pin_dir, names[i]);
		if (unlink(path) && errno != ENOENT)
			log_warn("steer: unpin %s: %s", path, strerror(errno));
	}
}

static void steer_stop(struct daemon_ctx *d, bool keep)
{
	bool was = S.running;

	S.running = false;
	if (S.rb) {
		if (S.d && S.d->loop)
			evloop_del_fd(S.d->loop, ring_buffer__epoll_fd(S.rb));
		ring_buffer__free(S.rb);
		S.rb = NULL;
	}
	bpf_link__destroy(S.iter_link);
	S.iter_link = NULL;
	for (int i = 0; i < L_COUNT; i++) {
		if (S.links[i] && !keep)
			bpf_link__unpin(S.links[i]);
		bpf_link__destroy(S.links[i]); /* a pinned link stays attached */
		S.links[i] = NULL;
	}
	if (!keep && S.pin_dir[0] && (was || S.conn)) {
		unpin_maps();
		if (rmdir(S.pin_dir) && errno != ENOENT && errno != ENOTEMPTY)
			log_debug("steer: rmdir %s: %s", S.pin_dir, strerror(errno));
	}
	steer_iter__destroy(S.iter);
	steer_sockops__destroy(S.ops);
	steer_connect__destroy(S.conn);
	S.iter = NULL;
	S.ops = NULL;
	S.conn = NULL;
	S.counters_fd = -1;
	errl_free(S.errl);
	S.errl = NULL;
	if (S.cgroup_fd >= 0)
		close(S.cgroup_fd);
	S.cgroup_fd = -1;
	if (!keep && S.made_cgroup && rmdir(S.cgroup))
		log_debug("steer: rmdir %s: %s", S.cgroup, strerror(errno));
	S.made_cgroup = false;
	topo_put(S.last);
	S.last = NULL;
	if (was)
		log_info("steer: stopped (%s)",
		         keep ? "programs and maps left pinned" : "detached");
}

static int steer_start(struct daemon_ctx *d, char *err, size_t errlen)
{
	const struct config *cfg = d->cfg;
	const struct topology *t;

	S.d = d;
	/* sk_lookup (userspace/relay) reads the route tables published here, so
	 * the maps are kept even when connect steering is off. */
	if (!cfg->cgroup[0] && !cfg->lookup) {
		log_info("steer: cgroup is empty and lookup off: no eBPF steering");
		return 0;
	}
	snprintf(S.pin_dir, sizeof(S.pin_dir), "%s", cfg->bpffs_dir);
	S.netns_cookie = netns_cookie();
	if (!S.netns_cookie) {
		snprintf(err, errlen, "SO_NETNS_COOKIE: %s", strerror(errno));
		return -1;
	}
	S.errl = errl_new(d->loop, cfg->relay_address, cfg->nroutes, err, errlen);
	if (!S.errl || prepare_bpffs(S.pin_dir, err, errlen) ||
	    (cfg->cgroup[0] && prepare_cgroup(cfg->cgroup, err, errlen)) ||
	    load_objects(err, errlen) || init_cfg(cfg, err, errlen) || attach_all(err, errlen) ||
	    start_events(err, errlen)) {
		/* Leave a predecessor's pinned state alone: it still steers. */
		steer_stop(d, true);
		return -1;
	}
	S.running = true;
	if (!S.subscribed) {
		if (topo_subscribe(publish, NULL)) {
			snprintf(err, errlen, "topo_subscribe failed");
			steer_stop(d, false);
			return -1;
		}
		S.subscribed = true;
	}
	log_info("steer: connect steering %s%s, maps in %s%s",
	         S.cgroup_fd >= 0 ? "on cgroup " : "off", S.cgroup_fd >= 0 ? S.cgroup : "",
	         S.pin_dir, S.adopted ? " (adopted)" : "");
	t = topo_current();
	if (t) {
		publish(t, NULL);
		topo_put(t);
	}
	return 0;
}

static void steer_reload(struct daemon_ctx *d, const struct config *cfg)
{
	if (!S.running)
		return;
	if (!S.adopted && cfg_enabled())
		set_cfg_flags(true, cfg->reader_policy == READER_POLICY_LEAST_CONN);
}

static void steer_counters(uint32_t backend_id, struct backend_counters *c)
{
	struct ms_counters v;
	int fd = S.counters_fd;

	if (fd < 0 || backend_id >= MS_MAX_BACKENDS || bpf_map_lookup_elem(fd, &backend_id, &v))
		return;
	c->active += v.active;
	c->steered += v.steered;
	c->connect_failures += v.connect_failures;
	c->open += v.active;
}

static void steer_counters_reset(uint32_t backend_id)
{
	const struct ms_counters zero = {0};

	if (S.counters_fd < 0 || backend_id >= MS_MAX_BACKENDS)
		return;
	if (bpf_map_update_elem(S.counters_fd, &backend_id, &zero, BPF_ANY))
		log_warn("steer: cannot clear the counters of backend id %u: %s", backend_id,
		         strerror(errno));
}

static void steer_status(struct json_object *root)
{
	if (!S.running || S.cgroup_fd < 0)
		return;
	json_object_object_add(root, "cgroup", json_object_new_string(S.cgroup));
	json_object_object_add(root, "bpffs_dir", json_object_new_string(S.pin_dir));
}

const struct service_ops steer_service = {
    .name = "steer",
    .start = steer_start,
    .reload = steer_reload,
    .stop = steer_stop,
    .backend_counters = steer_counters,
    .backend_reset = steer_counters_reset,
    .status_json = steer_status,
};
