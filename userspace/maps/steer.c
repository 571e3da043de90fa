/*
 * steer.c - steer_service: loads the client-side steering programs
 * (connect4/6, getpeername4/6, sockops, the close-on-demote iterator), pins
 * maps and links under bpffs_dir, attaches to the steered cgroup through
 * bpf_link, and publishes every topology snapshot into the maps: one
 * generation flip for routes and services, with the routes' error listeners
 * (both SOCKMAPs too) opened before and closed after.
 *
 * One daemon a bpffs_dir: the directory is locked (flock) while running. At
 * start, what an earlier daemon left is adopted when it is ours to continue
 * (pinned links and maps of this bpffs_dir and ABI) and removed otherwise
 * (leftover.h: maps of another layout, mysteer links on the cgroup or netns
 * that are not pinned here, a pinned link this configuration does not use).
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

#include <netinet/in.h>
#include <stdatomic.h>
#include <sys/socket.h>

#include "common/evloop.h"
#include "common/io.h"
#include "common/log.h"
#include "common/metrics.h"
#include "maps/errlisten.h"
#include "maps/leftover.h"
#include "maps/quiesce.h"
#include "maps/sockdiag.h"
#include "common/testenv.h"
#include "steer_connect.skel.h"
#include "steer_iter.skel.h"
#include "steer_list.skel.h"
#include "steer_sockops.skel.h"

#ifndef SO_NETNS_COOKIE
#define SO_NETNS_COOKIE 71
#endif

enum { L_CONNECT4, L_CONNECT6, L_GETPEER4, L_GETPEER6, L_SOCKOPS, L_COUNT };
static const char *const link_names[L_COUNT] = {
    MS_LINK_CONNECT4, MS_LINK_CONNECT6, MS_LINK_GETPEER4, MS_LINK_GETPEER6, MS_LINK_SOCKOPS,
};

struct steer {
	struct daemon_ctx *d;
	bool running, subscribed, adopted, made_cgroup;
	char cgroup[4096];
	char pin_dir[4096];
	int cgroup_fd;
	int lock_fd; /* flock on pin_dir: one daemon a bpffs_dir */
	uint64_t cgroup_id, netns_cookie;
	struct steer_connect *conn;
	struct steer_sockops *ops;
	struct steer_iter *iter;
	struct bpf_link *links[L_COUNT];
	struct bpf_link *iter_link;
	/* Close-on-demote on a kernel without bpf_sock_destroy: the listing
	 * iterator and sock_diag SOCK_DESTROY requests. */
	struct steer_list *list;
	struct bpf_link *list_link;
	int diag_fd;
	char demote_how[512];  /* what close-on-demote uses, or why it is off */
	char getpeer_off[256]; /* why the getpeername hooks are off, "" when on */
	struct ring_buffer *rb;
	/* error listeners by route id: on relay_address, and on ::1 for IPv6
	 * clients when relay_address is IPv4 (NULL when the host has no ::1) */
	struct errlisten *errl, *errl6;
	struct maps_route_ids route_ids; /* of the generation published last */
	struct maps_image *last;         /* the image published last, NULL: none yet */
	/* The generations (see write_generation): the active one, and what
	 * each holds and when it was retired, so that a generation is written
	 * again, and what only retired ones use is cleared, only once no
	 * program can read it. Flips are counted; safe: the last flip that a
	 * completed wait for readers covers. */
	uint32_t active;
	uint64_t flips, safe, wait_from;
	struct gen_state {
		uint64_t retired_at; /* flip that retired it; 0: active or unused */
		uint64_t t0;         /* mono_us of that flip */
		bool route[MS_ROUTE_SLOTS];
		bool backend[MS_MAX_BACKENDS];
	} gens[MS_GENERATIONS];
	bool backend_set[MS_MAX_BACKENDS];           /* entries written, not cleared */
	char gone_name[MS_ROUTE_SLOTS][MS_NAME_MAX]; /* removed routes, for the log */
	struct quiesce *quiesce;
	/* the newest topology that waits for a generation to write */
	const struct topology *pending;
	uint64_t last_fail_log[MS_MAX_BACKENDS];
	/* connections kept while their writer route has no target, by backend
	 * id: bit = route id (maps_hold_writer) */
	uint32_t held[MS_MAX_BACKENDS];
	/* closes by sock_diag, by backend id (__atomic): the kernel counts the
	 * kfunc's own in the counters map, which userspace cannot add to
	 * without racing the kernel's adds to the other fields */
	uint64_t diag_closed[MS_MAX_BACKENDS][MS_ROUTE_SLOTS][MS_PATHS];
	int counters_fd;
	maps_demote_fn demote_fn; /* the relay's close of its pairs */
	void *demote_arg;
};

static struct steer S = {.cgroup_fd = -1, .lock_fd = -1, .counters_fd = -1, .diag_fd = -1};

static void register_kernel_metrics(void);

/* bpffs is not mounted at boot on Debian: mount it, then make our folder. */
int maps_prepare_bpffs(const char *dir, char *err, size_t errlen)
{
	struct statfs st;

	if (statfs("/sys/fs/bpf", &st) || st.f_type != BPF_FS_MAGIC) {
		if (mount("bpf", "/sys/fs/bpf", "bpf", 0, NULL)) {
			snprintf(err, errlen, "mount bpffs at /sys/fs/bpf: %s", strerror(errno));
			return -1;
		}
		log_info("mounted bpffs at /sys/fs/bpf");
	}
	if (io_mkdir_p(dir, 0700)) {
		snprintf(err, errlen, "bpffs_dir %s: %s", dir, strerror(errno));
		return -1;
	}
	if (statfs(dir, &st) || st.f_type != BPF_FS_MAGIC) {
		snprintf(err, errlen, "bpffs_dir %s is not on a bpf filesystem", dir);
		return -1;
	}
	return 0;
}

static int prepare_cgroup(const char *want, char *err, size_t errlen)
{
	struct stat st;

	if (leftover_cgroup_path(want, S.cgroup, sizeof(S.cgroup))) {
		snprintf(err, errlen, "cgroup = auto: no cgroup2 mount in /proc/mounts");
		return -1;
	}
	if (stat(S.cgroup, &st)) {
		if (mkdir(S.cgroup, 0755)) {
			snprintf(err, errlen, "cgroup %s: %s", S.cgroup, strerror(errno));
			return -1;
		}
		S.made_cgroup = true;
	}
	S.cgroup_fd = open(S.cgroup, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	S.cgroup_id = leftover_cgroup_id(S.cgroup);
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

/* Whether the map pinned at path has the layout this build gives m (what
 * libbpf checks before reusing a pin); true when nothing is pinned there. */
static bool pinned_map_fits(const struct bpf_map *m, const char *path)
{
	struct bpf_map_info info;
	__u32 len = sizeof(info);
	bool fits;
	int fd = bpf_obj_get(path);

	if (fd < 0)
		return true;
	memset(&info, 0, sizeof(info));
	fits = !bpf_obj_get_info_by_fd(fd, &info, &len) && info.type == bpf_map__type(m) &&
	       info.key_size == bpf_map__key_size(m) && info.value_size == bpf_map__value_size(m) &&
	       info.max_entries == bpf_map__max_entries(m) &&
	       info.map_flags == bpf_map__map_flags(m);
	close(fd);
	return fits;
}

/* A pinned steer_cfg of this layout written by another ABI version. */
static bool pinned_abi_differs(void)
{
	char path[4200];
	struct ms_cfg c;
	__u32 zero = 0;
	bool differs;
	int fd;

	snprintf(path, sizeof(path), "%s/%s", S.pin_dir, MS_MAP_CFG);
	fd = bpf_obj_get(path);
	if (fd < 0)
		return false;
	differs =
	    !bpf_map_lookup_elem(fd, &zero, &c) && c.abi_version && c.abi_version != MS_ABI_VERSION;
	close(fd);
	return differs;
}

/*
 * Maps pinned by a daemon of another ABI (an older mysteerd stopped with
 * keep_on_exit, or killed): libbpf would refuse to reuse them, so they are
 * unpinned and made anew; the pinned links are still adopted (their programs
 * are swapped for ours), and steering resumes with the first publish.
 */
static void unpin_stale_maps(struct bpf_object *obj)
{
	bool all = pinned_abi_differs();
	struct bpf_map *m;

	bpf_object__for_each_map(m, obj)
	{
		const char *path = bpf_map__pin_path(m);
		if (!path || (!all && pinned_map_fits(m, path)))
			continue;
		if (unlink(path) == 0)
			log_warn("steer: pinned map %s is of another ABI (an older mysteerd's): "
			         "replaced",
			         bpf_map__name(m));
		else if (errno != ENOENT)
			log_warn("steer: unpin stale %s: %s", path, strerror(errno));
	}
}

#define OPEN_SKEL(type, dst)                                                                       \
	do {                                                                                       \
		LIBBPF_OPTS(bpf_object_open_opts, o, .pin_root_path = S.pin_dir);                  \
		dst = type##__open_opts(&o);                                                       \
		if (dst)                                                                           \
			unpin_stale_maps(dst->obj);                                                \
		if (!dst || type##__load(dst)) {                                                   \
			snprintf(err, errlen, "load %s: %s", #type, strerror(errno));              \
			return -1;                                                                 \
		}                                                                                  \
	} while (0)

/*
 * Close-on-demote with what the kernel has: the iterator calling the
 * bpf_sock_destroy() kfunc (6.5); else the listing iterator (iter/tcp, 5.9)
 * and sock_diag SOCK_DESTROY requests (CONFIG_INET_DIAG_DESTROY); else off.
 * S.demote_how says which, or why it is off.
 */
static void load_closers(void)
{
	char why[200];
	int rc;

	if (test_feature_off("sock_destroy")) {
		snprintf(why, sizeof(why), "off by MYSTEER_TEST_NO_FEATURE");
	} else {
		LIBBPF_OPTS(bpf_object_open_opts, o, .pin_root_path = S.pin_dir);
		S.iter = steer_iter__open_opts(&o);
		if (S.iter && !steer_iter__load(S.iter)) {
			snprintf(S.demote_how, sizeof(S.demote_how), "by bpf_sock_destroy");
			return;
		}
		snprintf(why, sizeof(why), "the kernel has no bpf_sock_destroy kfunc (6.5): %s",
		         strerror(errno));
		steer_iter__destroy(S.iter);
		S.iter = NULL;
	}
	rc = test_feature_off("sock_diag") ? -EOPNOTSUPP : sockdiag_probe();
	if (rc) {
		snprintf(S.demote_how, sizeof(S.demote_how),
		         "off (bpf_sock_destroy: %s; sock_diag SOCK_DESTROY: %s)", why,
		         strerror(-rc));
		return;
	}
	LIBBPF_OPTS(bpf_object_open_opts, o, .pin_root_path = S.pin_dir);
	S.list = steer_list__open_opts(&o);
	if (!S.list || steer_list__load(S.list) || (S.diag_fd = sockdiag_open()) < 0) {
		snprintf(S.demote_how, sizeof(S.demote_how),
		         "off (bpf_sock_destroy: %s; the tcp iterator (5.9): %s)", why,
		         strerror(errno));
		steer_list__destroy(S.list);
		S.list = NULL;
		return;
	}
	snprintf(S.demote_how, sizeof(S.demote_how),
	         "by sock_diag SOCK_DESTROY (bpf_sock_destroy: %s)", why);
}

static void getpeername_autoload(bool on)
{
	bpf_program__set_autoload(S.conn->progs.ms_getpeername4, on);
	bpf_program__set_autoload(S.conn->progs.ms_getpeername6, on);
}

/*
 * connect4/6 (4.17) and, where the kernel has them, the getpeername hooks
 * (5.8) that give an application the VIP back. Without them connect
 * steering still works; an application asking getpeername() sees the
 * server's own address. S.getpeer_off says why they are off.
 */
static int load_connect(char *err, size_t errlen)
{
	LIBBPF_OPTS(bpf_object_open_opts, o, .pin_root_path = S.pin_dir);

	S.getpeer_off[0] = '\0';
	S.conn = steer_connect__open_opts(&o);
	if (!S.conn)
		goto fail;
	unpin_stale_maps(S.conn->obj);
	if (test_feature_off("getpeername")) {
		snprintf(S.getpeer_off, sizeof(S.getpeer_off), "off by MYSTEER_TEST_NO_FEATURE");
		getpeername_autoload(false);
	}
	if (!steer_connect__load(S.conn))
		return 0;
	if (S.getpeer_off[0])
		goto fail;
	/* A kernel before 5.8 refuses the whole object for the getpeername
	 * programs' attach type: once more without them. */
	snprintf(S.getpeer_off, sizeof(S.getpeer_off),
	         "the kernel has no cgroup getpeername hooks (5.8): %s", strerror(errno));
	steer_connect__destroy(S.conn);
	S.conn = steer_connect__open_opts(&o);
	if (!S.conn)
		goto fail;
	getpeername_autoload(false);
	if (!steer_connect__load(S.conn))
		return 0;
fail:
	snprintf(err, errlen, "load steer_connect: %s", strerror(errno));
	return -1;
}

static int load_objects(char *err, size_t errlen)
{
	if (load_connect(err, errlen))
		return -1;
	OPEN_SKEL(steer_sockops, S.ops);
	load_closers();
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

static void remove_unused_link(const char *name, const char *why);

static int attach_all(char *err, size_t errlen)
{
	struct bpf_program *progs[L_COUNT] = {
	    S.conn->progs.ms_connect4,     S.conn->progs.ms_connect6, S.conn->progs.ms_getpeername4,
	    S.conn->progs.ms_getpeername6, S.ops->progs.ms_sockops,
	};

	for (int i = 0; i < L_COUNT && S.cgroup_fd >= 0; i++) {
		if ((i == L_GETPEER4 || i == L_GETPEER6) && S.getpeer_off[0]) {
			remove_unused_link(link_names[i], S.getpeer_off);
			continue;
		}
		S.links[i] = attach_one(progs[i], link_names[i], err, errlen);
		if (!S.links[i])
			return -1;
	}
	/* Also without connect steering: it closes handed-over connections. */
	if (S.iter) {
		S.iter_link = bpf_program__attach_iter(S.iter->progs.ms_close_iter, NULL);
		if (!S.iter_link) {
			snprintf(err, errlen, "attach tcp iterator: %s", strerror(errno));
			return -1;
		}
	} else if (S.list) {
		S.list_link = bpf_program__attach_iter(S.list->progs.ms_list_iter, NULL);
		if (!S.list_link) {
			snprintf(err, errlen, "attach tcp iterator: %s", strerror(errno));
			return -1;
		}
	}
	return 0;
}

static int cfg_fd(void)
{
	return bpf_map__fd(S.conn->maps.steer_cfg);
}

/* Our netns; keeps a predecessor's ENABLED flag (and so its route tables)
 * until our first publish. */
static int init_cfg(char *err, size_t errlen)
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

/* Deletes the services of generation gen. */
static int delete_services(uint32_t gen)
{
	int fd = bpf_map__fd(S.conn->maps.services);
	struct ms_service_key k, next, *del;
	size_t n = 0;
	void *prev = NULL;
	int rc = 0;

	del = malloc(sizeof(*del) * MS_GENERATIONS * MS_MAX_SERVICES);
	if (!del)
		return -1;
	while (n < MS_GENERATIONS * MS_MAX_SERVICES && !bpf_map_get_next_key(fd, prev, &next)) {
		if (next.gen == gen)
			del[n++] = next;
		k = next;
		prev = &k;
	}
	for (size_t i = 0; i < n; i++)
		if (bpf_map_delete_elem(fd, &del[i]) && errno != ENOENT)
			rc = -1;
	free(del);
	return rc;
}

/* A generation programs may still read: active, or retired by a flip that
 * no completed wait for readers has covered yet. */
static bool gen_read(uint32_t g)
{
	return g == S.active || S.gens[g].retired_at > S.safe;
}

/* What the generations programs may still read hold: route ids (busy for a
 * new route; their error listeners stay) and backend ids (their entries
 * stay). */
static void in_use(bool routes[MS_ROUTE_SLOTS], bool backends[MS_MAX_BACKENDS])
{
	memset(routes, 0, sizeof(bool) * MS_ROUTE_SLOTS);
	memset(backends, 0, sizeof(bool) * MS_MAX_BACKENDS);
	for (uint32_t g = 0; g < MS_GENERATIONS; g++) {
		if (!gen_read(g))
			continue;
		for (int r = 0; r < MS_ROUTE_SLOTS; r++)
			routes[r] |= S.gens[g].route[r];
		for (int b = 0; b < MS_MAX_BACKENDS; b++)
			backends[b] |= S.gens[g].backend[b];
	}
}

/* What a generation holds, for in_use(). */
static void gen_holds(uint32_t g, const struct maps_image *img)
{
	struct gen_state *s = &S.gens[g];

	for (int r = 0; r < MS_ROUTE_SLOTS; r++)
		s->route[r] = (img->routes[r].flags & MS_RT_PRESENT) != 0;
	for (int b = 0; b < MS_MAX_BACKENDS; b++)
		s->backend[b] = (img->backends[b].flags & MS_BE_PRESENT) != 0;
}

/*
 * One publish: backends that are present, then routes and services into the
 * next generation, which no program reads (publish() waits for that), then
 * one flip of active_gen. What only retired generations use (their
 * services, backends that left, error listeners of removed routes) is
 * cleared by clean_retired() once no program can read them any more.
 *
 * Why a wait for readers (an RCU grace period) and three generations, and
 * not a sequence check: a program reads active_gen once and then only that
 * generation, and runs to its end inside the kernel's RCU read side (every
 * non-sleepable BPF program does). Waiting for RCU readers after a flip
 * (quiesce.h) therefore proves that no program still reads the generation
 * it retired, and a generation is rewritten only after such a wait: nothing
 * is ever torn, however close publishes land. A sequence check would need
 * barriers and a retry path in every program. The wait (milliseconds, tens
 * under load) runs on the quiesce thread, not on the controller's loop; the
 * third generation lets a publish go at once when the one before it is still
 * being waited for (the generation it writes retired two flips ago), so two
 * publishes close together (a failover's probe results) never wait. A third
 * one within the wait is published when it ends, and a burst as one.
 * tests/unit/test_quiesce.c checks the wait on a running program.
 */
static int write_generation(const struct maps_image *img)
{
	int be_fd = bpf_map__fd(S.conn->maps.backends);
	int rt_fd = bpf_map__fd(S.conn->maps.route_sel);
	int svc_fd = bpf_map__fd(S.conn->maps.services);
	int gen_fd = bpf_map__fd(S.conn->maps.active_gen);
	__u32 zero = 0, gen = (S.active + 1) % MS_GENERATIONS;

	/* Left by an earlier publish, maybe a predecessor's. */
	if (delete_services(gen))
		return -1;
	/* Present backends first (an id is reused only long after it left the
	 * topology, so an entry in use by
	 * the active generation keeps its address); removed ones after. */
	for (__u32 id = 0; id < MS_MAX_BACKENDS; id++) {
		if (!(img->backends[id].flags & MS_BE_PRESENT))
			continue;
		if (bpf_map_update_elem(be_fd, &id, &img->backends[id], BPF_ANY))
			return -1;
		S.backend_set[id] = true;
	}
	for (__u32 r = 0; r < MS_ROUTE_SLOTS; r++) {
		__u32 idx = gen * MS_ROUTE_SLOTS + r;
		if (bpf_map_update_elem(rt_fd, &idx, &img->routes[r], BPF_ANY))
			return -1;
	}
	for (size_t i = 0; i < img->nservices; i++) {
		struct ms_service_key k = img->services[i].key;
		k.gen = gen;
		if (bpf_map_update_elem(svc_fd, &k, &img->services[i].val, BPF_ANY))
			return -1;
	}
	/* Everything above is visible before the flip to a program that sees
	 * the new generation (its lookups depend on the value it read). */
	atomic_thread_fence(memory_order_release);
	if (bpf_map_update_elem(gen_fd, &zero, &gen, BPF_ANY))
		return -1;
	S.flips++;
	S.gens[S.active].retired_at = S.flips;
	S.gens[S.active].t0 = mono_us();
	S.gens[gen].retired_at = 0;
	gen_holds(gen, img);
	S.active = gen;
	return 0;
}

/* Once no program can read them: the services of retired generations, the
 * entries of backends and the error listeners of routes that no generation
 * a program may read holds (closing drops their SOCKMAP entries). */
static void clean_retired(void)
{
	int be_fd = bpf_map__fd(S.conn->maps.backends);
	const struct ms_backend none = {0};
	bool routes[MS_ROUTE_SLOTS], backends[MS_MAX_BACKENDS];

	for (uint32_t g = 0; g < MS_GENERATIONS; g++) {
		struct gen_state *s = &S.gens[g];
		if (gen_read(g) || !s->retired_at)
			continue;
		log_debug("steer: generation %u retired %llu us ago has no readers now", g,
		          (unsigned long long)(mono_us() - s->t0));
		if (delete_services(g))
			log_warn("steer: delete generation %u's services: %s", g, strerror(errno));
		memset(s, 0, sizeof(*s));
	}
	in_use(routes, backends);
	for (__u32 id = 0; id < MS_MAX_BACKENDS; id++) {
		if (backends[id] || !S.backend_set[id])
			continue;
		if (bpf_map_update_elem(be_fd, &id, &none, BPF_ANY))
			log_warn("steer: clear backend id %u: %s", id, strerror(errno));
		else
			S.backend_set[id] = false;
	}
	for (int r = 0; r < MS_ROUTE_SLOTS; r++) {
		if (routes[r] || (errl_fd(S.errl, r) < 0 && errl_fd(S.errl6, r) < 0))
			continue;
		errl_close(S.errl, r);
		errl_close(S.errl6, r);
		if (S.gone_name[r][0])
			log_info("steer: route %s removed; its error listeners closed",
			         S.gone_name[r]);
		S.gone_name[r][0] = 0;
	}
}

/* After a flip: a wait for readers on the quiesce thread (on_quiesced then
 * cleans), unless one runs (on_quiesced starts the next); here if that
 * thread cannot take it. */
static void wait_for_readers(void)
{
	if (quiesce_busy(S.quiesce))
		return;
	S.wait_from = S.flips;
	if (!quiesce_start(S.quiesce))
		return;
	log_warn("steer: wait for readers on the quiesce thread: %s; waiting here",
	         strerror(errno));
	if (quiesce_wait(S.quiesce)) {
		log_error("steer: wait for readers of the old generation: %s; it is kept",
		          strerror(errno));
		return;
	}
	S.safe = S.wait_from;
	clean_retired();
}

/* What a previous daemon left published: its backends, and the active
 * generation's routes and services. */
static int read_image(struct maps_image *img)
{
	int be_fd = bpf_map__fd(S.conn->maps.backends);
	int rt_fd = bpf_map__fd(S.conn->maps.route_sel);
	int svc_fd = bpf_map__fd(S.conn->maps.services);
	int gen_fd = bpf_map__fd(S.conn->maps.active_gen);
	struct ms_service_key k, next;
	void *prev = NULL;
	__u32 zero = 0, gen;

	memset(img, 0, sizeof(*img));
	if (bpf_map_lookup_elem(gen_fd, &zero, &gen))
		return -1;
	if (gen >= MS_GENERATIONS) {
		errno = ERANGE;
		return -1;
	}
	for (__u32 id = 0; id < MS_MAX_BACKENDS; id++)
		if (bpf_map_lookup_elem(be_fd, &id, &img->backends[id]))
			return -1;
	for (__u32 r = 0; r < MS_ROUTE_SLOTS; r++) {
		__u32 idx = gen * MS_ROUTE_SLOTS + r;
		if (bpf_map_lookup_elem(rt_fd, &idx, &img->routes[r]))
			return -1;
		img->routes[r].name[MS_NAME_MAX - 1] = 0;
	}
	while (img->nservices < MS_MAX_SERVICES && !bpf_map_get_next_key(svc_fd, prev, &next)) {
		struct maps_service_entry *e = &img->services[img->nservices];
		if (next.gen == gen && !bpf_map_lookup_elem(svc_fd, &next, &e->val)) {
			e->key = next;
			e->key.gen = 0;
			img->nservices++;
		}
		k = next;
		prev = &k;
	}
	return 0;
}

/* The route ids of an image, from the names its routes carry. */
static void ids_of_image(const struct maps_image *img, struct maps_route_ids *ids)
{
	memset(ids, 0, sizeof(*ids));
	for (int r = 0; r < MS_ROUTE_SLOTS; r++)
		if (img->routes[r].flags & MS_RT_PRESENT)
			snprintf(ids->name[r], sizeof(ids->name[r]), "%s", img->routes[r].name);
}

/* Puts the listener fd into a SOCKMAP slot unless it is there already. */
static void sockmap_put(int map, uint32_t slot, int fd, const char *what)
{
	uint64_t cookie = 0, have = 0;
	socklen_t len = sizeof(cookie);
	__u64 v = (__u64)fd;

	if (fd < 0)
		return;
	if (!getsockopt(fd, SOL_SOCKET, SO_COOKIE, &cookie, &len) &&
	    !bpf_map_lookup_elem(map, &slot, &have) && have == cookie)
		return;
	if (bpf_map_update_elem(map, &slot, &v, BPF_ANY))
		log_warn("steer: %s error listener of route id %u into the SOCKMAP: %s", what,
		         slot - MS_MAX_BACKENDS, strerror(errno));
}

/*
 * The error listeners of every route of img (ids: its route ids), opened if
 * new, their addresses in the routes, and in both SOCKMAPs (for sk_lookup);
 * all before the flip that makes the route live. A listener stays in its
 * SOCKMAP slot until it is closed.
 */
static int open_listeners(const struct maps_route_ids *ids, struct maps_image *img, char *err,
                          size_t errlen)
{
	int sm = bpf_map__fd(S.conn->maps.steer_sockmap);
	int sm6 = bpf_map__fd(S.conn->maps.steer_sockmap6);

	for (uint32_t r = 0; r < MS_ROUTE_SLOTS; r++) {
		char e6[160];
		if (!ids->name[r][0] || (img->routes[r].flags & MS_RT_SPLIT))
			continue;
		if (errl_open(S.errl, r, err, errlen))
			return -1;
		if (S.errl6 && errl_fd(S.errl6, r) < 0 && errl_open(S.errl6, r, e6, sizeof(e6)))
			log_warn("steer: no IPv6 error listener for route %s: %s", ids->name[r],
			         e6);
		errl_endpoint(S.errl, r, &img->routes[r].errl);
		errl_endpoint(S.errl6, r, &img->routes[r].errl6);
		sockmap_put(sm, MS_SOCKMAP_ERR(r), errl_fd(S.errl, r), "the");
		sockmap_put(sm6, MS_SOCKMAP_ERR(r), errl_fd(S.errl6, r), "the IPv6");
	}
	return 0;
}

/* Routes of prev that img has not: named when their listeners close. */
static void note_removed(const struct maps_route_ids *prev, const struct maps_image *img)
{
	for (int r = 0; r < MS_ROUTE_SLOTS; r++)
		if (prev->name[r][0] && !(img->routes[r].flags & MS_RT_PRESENT))
			memcpy(S.gone_name[r], prev->name[r], sizeof(S.gone_name[r]));
}

static void set_reasons(const struct maps_image *img)
{
	for (int r = 0; r < MS_ROUTE_SLOTS; r++) {
		const struct ms_route *rt = &img->routes[r];
		if (!(rt->flags & MS_RT_PRESENT) || (rt->flags & MS_RT_SPLIT) || rt->ntargets)
			continue;
		errl_set_reason(S.errl, r, img->reason[r]);
		errl_set_reason(S.errl6, r, img->reason[r]);
	}
}

void maps_on_demote(maps_demote_fn fn, void *arg)
{
	S.demote_fn = fn;
	S.demote_arg = arg;
}

/* Tells the relay what to close: the mask, and each route id's port. */
static void demote_hook(const uint32_t mask[MS_MAX_BACKENDS], const struct maps_image *old)
{
	uint16_t port[MS_ROUTE_SLOTS];

	for (int r = 0; r < MS_ROUTE_SLOTS; r++)
		port[r] = (old->routes[r].flags & MS_RT_PRESENT) ? old->routes[r].port : 0;
	S.demote_fn(mask, port, S.demote_arg);
}

/* The fallback: the listing iterator names the sockets, sock_diag destroys
 * them one by one. */
static void close_by_sockdiag(const uint32_t mask[MS_MAX_BACKENDS])
{
	struct ms_close_rec rec[64];
	uint64_t t0 = mono_us(), closed = 0, failed = 0;
	int fd, err = 0;
	ssize_t n;

	memcpy(S.list->bss->close_mask, mask, sizeof(S.list->bss->close_mask));
	fd = bpf_iter_create(bpf_link__fd(S.list_link));
	if (fd < 0) {
		log_error("close_on_demote: create iterator: %s", strerror(errno));
		return;
	}
	while ((n = read(fd, rec, sizeof(rec))) > 0) {
		for (size_t i = 0; i < (size_t)n / sizeof(rec[0]); i++) {
			struct ms_close_rec *r = &rec[i];
			int rc = sockdiag_destroy(S.diag_fd, r->family, r->laddr, r->lport,
			                          r->raddr, r->rport);
			if (rc == 0 || rc == -ENOENT) {
				closed += rc == 0; /* ENOENT: it closed meanwhile */
				if (rc == 0 && r->backend_id < MS_MAX_BACKENDS &&
				    r->route_id < MS_ROUTE_SLOTS && r->path < MS_PATHS)
					__atomic_add_fetch(
					    &S.diag_closed[r->backend_id][r->route_id][r->path], 1,
					    __ATOMIC_RELAXED);
			} else {
				failed++;
				err = -rc;
			}
		}
	}
	close(fd);
	memset(S.list->bss->close_mask, 0, sizeof(S.list->bss->close_mask));
	if (failed)
		log_warn("close_on_demote: sock_diag could not close %llu connection(s): %s",
		         (unsigned long long)failed, strerror(err));
	log_info("close_on_demote: closed %llu steered connections in %llu us (sock_diag)",
	         (unsigned long long)closed, (unsigned long long)(mono_us() - t0));
}

/* Runs the iterator once with this mask: destroys the matching sockets. */
static void close_on_demote(const uint32_t mask[MS_MAX_BACKENDS])
{
	if (!S.iter_link) {
		if (S.list_link)
			close_by_sockdiag(mask);
		return;
	}
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

/*
 * A daemon that adopted pinned maps republishes them at once with its own
 * error listeners (the predecessor's died with it), keeping its
 * predecessor's routes, route ids and targets until its probes decide.
 */
static int republish_adopted(char *err, size_t errlen)
{
	struct maps_image *img = malloc(sizeof(*img));
	int rc = -1;

	if (!img || read_image(img)) {
		snprintf(err, errlen, "read the adopted maps: %s",
		         img ? strerror(errno) : "no memory");
		goto out;
	}
	ids_of_image(img, &S.route_ids);
	/* What the predecessor's generation holds, as if we had written it. */
	gen_holds(S.active, img);
	for (int b = 0; b < MS_MAX_BACKENDS; b++)
		S.backend_set[b] = S.gens[S.active].backend[b];
	if (open_listeners(&S.route_ids, img, err, errlen))
		goto out;
	if (write_generation(img)) {
		snprintf(err, errlen, "write maps: %s", strerror(errno));
		goto out;
	}
	wait_for_readers();
	rc = 0;
out:
	free(img);
	return rc;
}

/*
 * After a restart: what the predecessor steered is in its maps. A writer
 * route it left with no target (its writer missed probes) held the
 * connections of every backend then, so they are held here too: closed once
 * another server is the writer (maps_hold_writer).
 */
static void hold_adopted(const struct maps_image *adopted, const struct topology *t,
                         const struct maps_image *img, uint32_t mask[MS_MAX_BACKENDS])
{
	maps_close_mask_adopted(adopted, t, img, mask);
	for (uint32_t r = 0; r < MS_ROUTE_SLOTS; r++) {
		const struct ms_route *rt = &adopted->routes[r];
		if (!(rt->flags & MS_RT_PRESENT) || (rt->flags & (MS_RT_READER | MS_RT_SPLIT)) ||
		    rt->ntargets)
			continue;
		for (uint32_t id = 0; id < MS_MAX_BACKENDS; id++)
			if (adopted->backends[id].flags & MS_BE_PRESENT)
				S.held[id] |= 1u << r;
	}
}

static void publish(const struct topology *t, void *arg)
{
	const struct config *cfg = S.d ? S.d->cfg : NULL;
	struct maps_image *img, *adopted = NULL;
	struct maps_route_ids ids;
	uint32_t rid[MS_MAX_ROUTES];
	uint32_t mask[MS_MAX_BACKENDS];
	bool busy[MS_ROUTE_SLOTS], backends[MS_MAX_BACKENDS];
	bool closing;
	size_t nclose = 0;
	char err[160];

	if (!S.running || !cfg)
		return;
	/* The generation to write may still be read: this topology goes when
	 * the wait for its readers ends (on_quiesced), or a newer one that
	 * comes meanwhile instead. */
	if (gen_read((S.active + 1) % MS_GENERATIONS)) {
		topo_put(S.pending);
		S.pending = topo_get(t);
		return;
	}
	if (S.adopted && any_unknown(t)) {
		log_debug("steer: generation %llu has unprobed backends; keeping the adopted maps",
		          (unsigned long long)t->generation);
		return;
	}
	closing = cfg->close_on_demote;
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
	in_use(busy, backends);
	if (!img || maps_assign_route_ids(&S.route_ids, busy, t, &ids, rid, err, sizeof(err)) ||
	    maps_build_image(t, cfg, rid, img, err, sizeof(err)) ||
	    open_listeners(&ids, img, err, sizeof(err))) {
		log_error("steer: cannot publish generation %llu: %s",
		          (unsigned long long)t->generation, img ? err : "out of memory");
		free(img);
		free(adopted);
		return;
	}
	set_reasons(img);
	if (write_generation(img)) {
		log_error("steer: write maps: %s", strerror(errno));
		free(img);
		free(adopted);
		return;
	}
	set_cfg_flags(true, cfg->reader_policy == READER_POLICY_LEAST_CONN);
	note_removed(&S.route_ids, img);
	S.route_ids = ids;
	wait_for_readers();
	log_debug("steer: published generation %llu", (unsigned long long)t->generation);

	memset(mask, 0, sizeof(mask));
	if (closing && S.last)
		maps_close_mask(S.last, t, img, mask);
	else if (closing && adopted)
		hold_adopted(adopted, t, img, mask);
	if (closing)
		nclose = maps_hold_writer(img, t, mask, S.held);
	if (nclose)
		close_on_demote(mask);
	/* Relay pairs are this daemon's own: they carry its ids. */
	if (nclose && S.last && S.demote_fn)
		demote_hook(mask, S.last);
	free(adopted);
	free(S.last);
	S.last = img;
}

/* A wait for readers is over: the generations retired before it began
 * are free. The next wait if flips came meanwhile, the cleanup, then the
 * topology that waited, if any. */
static void on_quiesced(void *arg)
{
	const struct topology *t = S.pending;

	if (!S.conn)
		return;
	S.safe = S.wait_from;
	if (S.flips > S.safe)
		wait_for_readers();
	clean_retired();
	S.pending = NULL;
	if (t) {
		publish(t, NULL);
		topo_put(t);
	}
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

/* A pinned link of a part this configuration turns off. */
static void remove_unused_link(const char *name, const char *why)
{
	char err[256];
	int rc = leftover_remove_pinned_link(S.pin_dir, name, err, sizeof(err));

	if (rc > 0)
		log_warn("steer: removed pinned %s: %s", name, why);
	else if (rc < 0)
		log_warn("steer: %s", err);
}

/*
 * What an earlier daemon left that this one will not adopt: mysteer links
 * on the cgroup or this netns that are not pinned here (an old connect4
 * ahead of ours would rewrite the VIP first, from its own stale maps), and
 * pinned links of a part this configuration turns off. A link that a running
 * mysteerd holds on a hook this daemon attaches to stops the start.
 */
static int remove_leftovers(const struct config *cfg, char *err, size_t errlen)
{
	uint32_t keep[L_COUNT + 1];
	size_t nkeep = 0;
	struct leftover_scope cg = {.keep = keep, .live = LEFTOVER_LIVE_REFUSE};
	struct leftover_scope ns = {.keep = keep, .live = LEFTOVER_LIVE_REFUSE};

	for (int i = 0; i < L_COUNT; i++) {
		if (cfg->cgroup[0]) {
			keep[nkeep] = leftover_pinned_link_id(S.pin_dir, link_names[i]);
			nkeep += keep[nkeep] != 0;
		} else {
			remove_unused_link(link_names[i], "connect steering is off (cgroup =)");
		}
	}
	if (cfg->lookup) {
		keep[nkeep] = leftover_pinned_link_id(S.pin_dir, MS_LINK_LOOKUP);
		nkeep += keep[nkeep] != 0;
	} else {
		remove_unused_link(MS_LINK_LOOKUP, "lookup is off");
	}
	cg.nkeep = ns.nkeep = nkeep;
	cg.cgroup_id = S.cgroup_fd >= 0 ? S.cgroup_id : 0;
	ns.netns_ino = leftover_netns_ino();
	/* With lookup off, a running daemon's sk_lookup is not in our way. */
	if (!cfg->lookup)
		ns.live = LEFTOVER_LIVE_SPARE;
	if (leftover_detach_links(&cg, NULL, err, errlen) < 0 ||
	    leftover_detach_links(&ns, NULL, err, errlen) < 0)
		return -1;
	return 0;
}

/*
 * No eBPF steering in this configuration: what an earlier daemon pinned
 * under bpffs_dir, and its sk_lookup links on this netns, would go on
 * steering with stale maps, so they go too (unless a running daemon uses
 * that bpffs_dir: then they are its own).
 */
static void remove_all_leftovers(const char *dir)
{
	struct leftover_scope ns = {.netns_ino = leftover_netns_ino(), .live = LEFTOVER_LIVE_SPARE};
	char err[256];
	int fd, n;

	if (access(dir, F_OK) == 0) {
		if (leftover_lock(dir, &fd, err, sizeof(err))) {
			log_info("steer: %s; leaving it alone", err);
			return;
		}
		n = leftover_remove_pins(dir, err, sizeof(err));
		if (n < 0)
			log_warn("steer: %s", err);
		else if (n > 0)
			log_warn("steer: removed %d names an earlier mysteerd pinned under %s", n,
			         dir);
		close(fd);
	}
	if (leftover_detach_links(&ns, NULL, err, sizeof(err)) < 0)
		log_warn("steer: %s", err);
}

static void steer_stop(struct daemon_ctx *d, bool keep)
{
	bool was = S.running;
	char err[256];

	S.running = false;
	if (S.rb) {
		if (S.d && S.d->loop)
			evloop_del_fd(S.d->loop, ring_buffer__epoll_fd(S.rb));
		ring_buffer__free(S.rb);
		S.rb = NULL;
	}
	bpf_link__destroy(S.iter_link);
	S.iter_link = NULL;
	bpf_link__destroy(S.list_link);
	S.list_link = NULL;
	steer_list__destroy(S.list);
	S.list = NULL;
	if (S.diag_fd >= 0)
		close(S.diag_fd);
	S.diag_fd = -1;
	for (int i = 0; i < L_COUNT; i++) {
		bpf_link__destroy(S.links[i]); /* a pinned link stays attached */
		S.links[i] = NULL;
	}
	/* The cleanup of retired generations whose wait was still running. */
	if (S.quiesce && S.conn && S.flips > S.safe && !quiesce_wait(S.quiesce)) {
		S.safe = S.flips;
		clean_retired();
	}
	quiesce_free(S.quiesce);
	S.quiesce = NULL;
	S.flips = S.safe = S.wait_from = 0;
	memset(S.gens, 0, sizeof(S.gens));
	memset(S.backend_set, 0, sizeof(S.backend_set));
	memset(S.gone_name, 0, sizeof(S.gone_name));
	memset(S.held, 0, sizeof(S.held));
	topo_put(S.pending);
	S.pending = NULL;
	/* Every name mysteer pins here, whichever part or run pinned it. */
	if (!keep && S.lock_fd >= 0 && leftover_remove_pins(S.pin_dir, err, sizeof(err)) < 0)
		log_warn("steer: %s", err);
	steer_iter__destroy(S.iter);
	steer_sockops__destroy(S.ops);
	steer_connect__destroy(S.conn);
	S.iter = NULL;
	S.ops = NULL;
	S.conn = NULL;
	S.counters_fd = -1;
	errl_free(S.errl);
	errl_free(S.errl6);
	S.errl = S.errl6 = NULL;
	memset(&S.route_ids, 0, sizeof(S.route_ids));
	if (S.cgroup_fd >= 0)
		close(S.cgroup_fd);
	S.cgroup_fd = -1;
	if (!keep && S.made_cgroup && rmdir(S.cgroup))
		log_debug("steer: rmdir %s: %s", S.cgroup, strerror(errno));
	S.made_cgroup = false;
	if (S.lock_fd >= 0)
		close(S.lock_fd);
	S.lock_fd = -1;
	free(S.last);
	S.last = NULL;
	if (was)
		log_info("steer: stopped (%s)",
		         keep ? "programs and maps left pinned" : "detached");
}

/* The wait for readers, and the first one now: a predecessor may have
 * flipped just before it died, and no wait followed. */
static int start_quiesce(char *err, size_t errlen)
{
	__u32 zero = 0, gen = 0;

	S.quiesce = quiesce_new(S.d->loop, on_quiesced, NULL, err, errlen);
	if (!S.quiesce)
		return -1;
	if (quiesce_wait(S.quiesce)) {
		snprintf(err, errlen, "wait for BPF programs: %s", strerror(errno));
		return -1;
	}
	/* The generation programs read now; the others are free. */
	if (bpf_map_lookup_elem(bpf_map__fd(S.conn->maps.active_gen), &zero, &gen) ||
	    gen >= MS_GENERATIONS)
		gen = 0;
	S.active = gen;
	return 0;
}

/* Error listeners: on relay_address, and on ::1 for IPv6 clients when that
 * is IPv4 (optional: a host without IPv6 has no ::1). */
static int new_listener_sets(const struct config *cfg, char *err, size_t errlen)
{
	char e6[160];

	S.errl = errl_new(S.d->loop, cfg->relay_address, err, errlen);
	if (!S.errl)
		return -1;
	if (strchr(cfg->relay_address, ':'))
		return 0;
	S.errl6 = errl_new(S.d->loop, "::1", e6, sizeof(e6));
	if (S.errl6 && errl_open(S.errl6, 0, e6, sizeof(e6))) {
		log_info("steer: no IPv6 error listeners: %s", e6);
		errl_free(S.errl6);
		S.errl6 = NULL;
	}
	errl_close(S.errl6, 0);
	return 0;
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
		remove_all_leftovers(cfg->bpffs_dir);
		return 0;
	}
	snprintf(S.pin_dir, sizeof(S.pin_dir), "%s", cfg->bpffs_dir);
	S.netns_cookie = netns_cookie();
	if (!S.netns_cookie) {
		snprintf(err, errlen, "SO_NETNS_COOKIE: %s", strerror(errno));
		return -1;
	}
	if (maps_prepare_bpffs(S.pin_dir, err, errlen) ||
	    leftover_lock(S.pin_dir, &S.lock_fd, err, errlen)) {
		steer_stop(d, true);
		return -1;
	}
	if (new_listener_sets(cfg, err, errlen) ||
	    (cfg->cgroup[0] && prepare_cgroup(cfg->cgroup, err, errlen)) ||
	    remove_leftovers(cfg, err, errlen) || load_objects(err, errlen) ||
	    init_cfg(err, errlen) || start_quiesce(err, errlen) || attach_all(err, errlen) ||
	    start_events(err, errlen) || (S.adopted && republish_adopted(err, errlen))) {
		/* Leave a predecessor's pinned state alone: it still steers. */
		steer_stop(d, true);
		return -1;
	}
	S.running = true;
	register_kernel_metrics();
	if (!S.subscribed) {
		if (topo_subscribe(publish, NULL)) {
			snprintf(err, errlen, "topo_subscribe failed");
			steer_stop(d, false);
			return -1;
		}
		S.subscribed = true;
	}
	if (S.getpeer_off[0])
		log_warn("kernel features: getpeername off (%s): applications see the server's "
		         "address, not the VIP, as their peer",
		         S.getpeer_off);
	log_info("kernel features: %s; close_on_demote %s",
	         S.getpeer_off[0] ? "connect4 on, getpeername off" : "connect4/getpeername on",
	         S.demote_how);
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
	struct ms_path_counters t;
	int fd = S.counters_fd;

	if (fd < 0 || backend_id >= MS_MAX_BACKENDS || bpf_map_lookup_elem(fd, &backend_id, &v))
		return;
	t = maps_counters_total(&v);
	c->active += t.active;
	c->steered += t.steered;
	c->connect_failures += t.connect_failures;
	c->open += t.active;
}

static void steer_counters_reset(uint32_t backend_id)
{
	static const struct ms_counters zero;

	if (S.counters_fd < 0 || backend_id >= MS_MAX_BACKENDS)
		return;
	for (int r = 0; r < MS_ROUTE_SLOTS; r++)
		for (int p = 0; p < MS_PATHS; p++)
			__atomic_store_n(&S.diag_closed[backend_id][r][p], 0, __ATOMIC_RELAXED);
	if (bpf_map_update_elem(S.counters_fd, &backend_id, &zero, BPF_ANY))
		log_warn("steer: cannot clear the counters of backend id %u: %s", backend_id,
		         strerror(errno));
}

static void sockaddr_from_ep(const struct ms_endpoint *ep, struct sockaddr_storage *ss,
                             socklen_t *len)
{
	memset(ss, 0, sizeof(*ss));
	*len = 0;
	if (ep->family == MS_AF_INET) {
		struct sockaddr_in *s = (struct sockaddr_in *)ss;
		s->sin_family = AF_INET;
		s->sin_port = ep->port;
		memcpy(&s->sin_addr, ep->addr, 4);
		*len = sizeof(*s);
	} else if (ep->family == MS_AF_INET6) {
		struct sockaddr_in6 *s = (struct sockaddr_in6 *)ss;
		s->sin6_family = AF_INET6;
		s->sin6_port = ep->port;
		memcpy(&s->sin6_addr, ep->addr, 16);
		*len = sizeof(*s);
	}
}

/*
 * The ids the pinned maps use, read before our first publish: every backend
 * entry (the address it means to the programs and to sk_lookup's slots),
 * every id whose counters show connections (sockets carry it in their
 * marks), and the writer of the active generation's writer route.
 */
static void steer_prior_ids(struct topo_prior_ids *p)
{
	struct maps_image *img;
	struct ms_counters c;

	if (!S.conn || !S.adopted)
		return;
	img = malloc(sizeof(*img));
	if (!img || read_image(img)) {
		log_warn("steer: cannot read the pinned maps for the backend ids: %s",
		         img ? strerror(errno) : "no memory");
		free(img);
		return;
	}
	for (uint32_t id = 0; id < MS_MAX_BACKENDS && id < TOPO_MAX_IDS; id++) {
		if (img->backends[id].flags & MS_BE_PRESENT) {
			p->held[id] = true;
			sockaddr_from_ep(&img->backends[id].ep, &p->addr[id], &p->addrlen[id]);
		}
		if (S.counters_fd >= 0 && !bpf_map_lookup_elem(S.counters_fd, &id, &c) &&
		    (c.active || maps_counters_total(&c).steered))
			p->held[id] = true;
	}
	for (int r = 0; r < MS_ROUTE_SLOTS; r++) {
		const struct ms_route *rt = &img->routes[r];
		if ((rt->flags & MS_RT_PRESENT) && !(rt->flags & (MS_RT_SPLIT | MS_RT_READER)) &&
		    rt->ntargets == 1 && rt->target[0] < MS_MAX_BACKENDS)
			p->writer_id = rt->target[0];
	}
	free(img);
}

/* The kernel paths' figures, read from the counters map at each render (on
 * the loop thread, as every render, and as the publisher that names the
 * route ids). A (backend, route, path) has series once it counted anything:
 * each path serves only some routes and backends (connect: the cgroup's
 * clients; lookup: local servers; relay: remote ones). */
static struct {
	struct metric_family *steered, *active, *failures, *closed;
} KM;

static void collect_backend(const char *backend, uint32_t id, const struct ms_counters *v)
{
	for (int r = 0; r < MS_ROUTE_SLOTS; r++) {
		const char *route = S.route_ids.name[r];

		if (!route[0])
			continue; /* an id no route holds now */
		for (int p = 0; p < MS_PATHS; p++) {
			const struct ms_path_counters *c = &v->by[r][p];
			uint64_t closed =
			    c->closed_on_demote +
			    __atomic_load_n(&S.diag_closed[id][r][p], __ATOMIC_RELAXED);
			const char *path = maps_path_name((unsigned)p);

			if (!c->steered && !c->active && !c->connect_failures && !closed)
				continue;
			metric_set(metric_at(KM.steered, backend, route, path), (double)c->steered);
			metric_set(metric_at(KM.closed, backend, route, path), (double)closed);
			if (p != MS_PATH_CONNECT)
				continue; /* sockops follows the connect path's sockets only */
			metric_set(metric_at(KM.active, backend, route, path), (double)c->active);
			metric_set(metric_at(KM.failures, backend, route, path),
			           (double)c->connect_failures);
		}
	}
}

static void collect_kernel(struct metrics *m, void *arg)
{
	const struct topology *t;
	struct ms_counters *v;

	(void)m;
	(void)arg;
	if (!S.running || S.counters_fd < 0 || !(t = topo_current()))
		return;
	v = malloc(sizeof(*v));
	for (size_t i = 0; v && i < t->nbackends; i++) {
		const struct topo_backend *b = &t->backends[i];
		uint32_t id = b->id;

		if (id < MS_MAX_BACKENDS && !bpf_map_lookup_elem(S.counters_fd, &id, v))
			collect_backend(b->name, id, v);
	}
	free(v);
	topo_put(t);
}

static void register_kernel_metrics(void)
{
	static bool done;
	static const char *const labels[] = {"backend", "route", "path", NULL};
	const struct metric_def defs[] = {
	    {&KM.steered, METRIC_COUNTER, "mysteer_kernel_steered_connections_total",
	     "Connections the eBPF programs steered to the backend, by route and path (connect: "
	     "cgroup connect4/6, lookup: sk_lookup handoff to the server's listener, relay: "
	     "sk_lookup to the relay)",
	     labels},
	    {&KM.active, METRIC_GAUGE, "mysteer_kernel_active_connections",
	     "Connect-steered connections established and not closed yet", labels},
	    {&KM.failures, METRIC_COUNTER, "mysteer_kernel_connect_failures_total",
	     "Connect-steered connections whose connect to the backend failed", labels},
	    {&KM.closed, METRIC_COUNTER, "mysteer_kernel_closed_on_demote_total",
	     "Steered connections closed because their backend left the route (close_on_demote)",
	     labels},
	};

	if (!done)
		done = metrics_register(defs, sizeof(defs) / sizeof(defs[0]), collect_kernel, NULL);
}

static bool steer_ready(char *why, size_t len)
{
	const struct config *cfg = S.d ? S.d->cfg : NULL;

	if (!cfg || (!cfg->cgroup[0] && !cfg->lookup))
		return true; /* no eBPF steering configured */
	if (!S.running) {
		snprintf(why, len, "steer: the eBPF programs are not attached");
		return false;
	}
	if (!S.last) {
		snprintf(why, len, "steer: no topology written to the eBPF maps yet");
		return false;
	}
	return true;
}

static void steer_status(struct json_object *root)
{
	if (S.running && S.demote_how[0])
		json_object_object_add(root, "close_on_demote",
		                       json_object_new_string(S.demote_how));
	if (S.running && S.getpeer_off[0])
		json_object_object_add(root, "getpeername_off",
		                       json_object_new_string(S.getpeer_off));
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
    .prior_ids = steer_prior_ids,
    .status_json = steer_status,
    .ready = steer_ready,
};
