/*
 * users.h - the users of the 6450 proxy ([user:NAME]): a table made from
 * the config and never changed after, shared by reference (a reload makes a
 * new one; the workers take it up between logins), and the check of a
 * login against it, which does the same work for a name the table does not
 * have as for a known name with a wrong password, so that the time of a
 * refusal does not tell which names exist.
 */
#ifndef MYSTEER_PROXY_USERS_H
#define MYSTEER_PROXY_USERS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/topology.h"
#include "config/config.h"
#include "proxy/proto.h"

struct proxy_user {
	char name[TOPO_NAME_MAX];
	uint8_t stage2[SHA1_LEN]; /* SHA1(SHA1(password)) */
	uint8_t stage1[SHA1_LEN]; /* SHA1(password), when has_password */
	bool has_password;        /* stage1 known: its pools are kept warm */
	bool empty;               /* the password is empty: the login's reply is too */
	bool has_hash;
};

struct user_table {
	_Atomic int refs;
	size_t n;
	/* an unknown name is checked against this: a random stage2 that no
	 * reply matches */
	struct proxy_user dummy;
	struct proxy_user users[];
};

/* A table of cfg's users, one reference held; NULL when out of memory or
 * without randomness for the dummy. */
struct user_table *users_new(const struct config *cfg);
struct user_table *users_ref(struct user_table *t);
/* Drops a reference; the last one wipes the hashes and frees. NULL: no-op. */
void users_put(struct user_table *t);
/* The user called name, or the table's dummy (*known false). Every entry is
 * compared, whatever matches. */
const struct proxy_user *users_find(const struct user_table *t, const char *name, bool *known);
/*
 * mysql_native_password: whether reply (n bytes) answers scramble for the
 * user called name; an empty reply answers for a user whose password is
 * empty (as a client sends it), after the same work. stage1 gets
 * SHA1(password) as the reply gives it (what the proxy logs in to backends
 * with). An unknown name is checked against the dummy the same way, and
 * fails.
 */
bool users_check(const struct user_table *t, const char *name, const uint8_t *scramble,
                 const uint8_t *reply, size_t n, uint8_t stage1[SHA1_LEN]);
/* What changed from old to now, as "added a, b; removed c; password changed
 * for d" (empty when nothing did). */
void users_diff(const struct user_table *old, const struct user_table *now, char *out, size_t len);

#endif
