/*
 * leftover.h - what a mysteerd attached and pinned, found again without the
 * process that made it: the lock on bpffs_dir, the names pinned there, and
 * the links of mysteer's programs (recognised by program name) on a cgroup
 * or a network namespace. steer_service uses it at start to adopt what is
 * its own and remove what an earlier daemon left; `mysteerctl detach` to
 * remove everything, daemon running or not. It acts only on the bpffs_dir,
 * cgroup and network namespace it is given.
 *
 * Plain libbpf calls, no skeleton, so mysteerctl links it.
 */
#ifndef MYSTEER_LEFTOVER_H
#define MYSTEER_LEFTOVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Every name mysteer pins under bpffs_dir. */
extern const char *const leftover_link_names[];
extern const size_t leftover_nlink_names;
extern const char *const leftover_map_names[];
extern const size_t leftover_nmap_names;

/*
 * Locks dir for this process: flock on the directory itself (bpffs holds no
 * regular files), held while *fd stays open. Returns 0, or -1 with one line
 * naming the holder's pid when another process holds it.
 */
int leftover_lock(const char *dir, int *fd, char *err, size_t errlen);

/* The pid holding the lock of dir (from /proc/locks), 0 when none. */
long leftover_lock_holder(const char *dir);

/* Where mysteer attaches: the cgroup `[steer] cgroup` names ("auto": a child
 * `mysteer` of the cgroup2 mount found in /proc/mounts; "": none, out ""),
 * -1 when auto finds no cgroup2 mount; its id as links report it (0 when
 * it does not exist); the inode of this process's network namespace. */
int leftover_cgroup_path(const char *want, char *out, size_t len);
uint64_t leftover_cgroup_id(const char *path);
uint64_t leftover_netns_ino(void);

/* What to do with a link that a running mysteerd (not this process) holds. */
enum leftover_live {
	LEFTOVER_LIVE_REFUSE = 0, /* stop with an error naming its pid */
	LEFTOVER_LIVE_SPARE,      /* leave it: it is not in this daemon's way */
	LEFTOVER_LIVE_DETACH,     /* detach it too (mysteerctl detach) */
};

/* Where leftover_detach_links looks and what it spares. */
struct leftover_scope {
	uint64_t cgroup_id;   /* mysteer's cgroup links on this cgroup; 0: none */
	uint64_t netns_ino;   /* mysteer's sk_lookup links on this netns; 0: none */
	const uint32_t *keep; /* link ids left alone (the ones being adopted) */
	size_t nkeep;
	enum leftover_live live;
};

/*
 * Detaches the links of mysteer's programs attached to the scope's cgroup
 * and network namespace, except those in keep. A link that a running
 * mysteerd other than this process holds open is handled as s->live says;
 * with REFUSE nothing more is detached and -1 is returned with err naming
 * that pid. *holder (may be NULL) gets the pid of such a daemon, 0 if none.
 * Returns how many links were detached, or -1 with err.
 */
int leftover_detach_links(const struct leftover_scope *s, long *holder, char *err, size_t errlen);

/* The id of the link pinned as dir/name, 0 when there is none. */
uint32_t leftover_pinned_link_id(const char *dir, const char *name);

/* Detaches the link pinned as dir/name and unpins it. 1 when one was there,
 * 0 when none, -1 with err. */
int leftover_remove_pinned_link(const char *dir, const char *name, char *err, size_t errlen);

/*
 * Detaches the links pinned under dir, unpins every mysteer name there and
 * removes dir when it is then empty. Returns how many names were removed, or
 * -1 with err (what could be removed was).
 */
int leftover_remove_pins(const char *dir, char *err, size_t errlen);

#endif
