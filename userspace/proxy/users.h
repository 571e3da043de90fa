/*
 * users.h - the users of the 6450 proxy ([user:NAME]): a table made from
 * the config and never changed after, shared by reference (a reload makes a
 * new one; the workers take it up between logins), and the check of a
 * login against it, which does the same work for a name the table does not
 * have as for a known name with a wrong password, so that the time of a
 * refusal does not tell which names exist.
 *
 * caching_sha2_password: each table keeps, in memory only, the
 * SHA256(SHA256(password)) of its users that passed a full authentication
 * (the password itself, over TLS or RSA), as a MySQL server's cache does;
 * fast authentication checks a scramble against it. A reload makes a new
 * table, so a new, empty cache (as FLUSH PRIVILEGES empties a server's).
 */
#ifndef MYSTEER_PROXY_USERS_H
#define MYSTEER_PROXY_USERS_H

#include <pthread.h>
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
	/* the password itself, when has_password: caching_sha2_password
	 * towards MySQL 8 backends needs SHA256(password) for fast
	 * authentication and the password for full authentication (wiped with
	 * the table, users_put) */
	char password[128];
	bool has_password; /* stage1 known: its pools are kept warm */
	bool empty;        /* the password is empty: the login's reply is too */
	bool has_hash;
};

/* The caching_sha2_password cache of a table: one entry per user, the
 * last one the dummy's (never filled). */
struct sha2_cache {
	pthread_mutex_t mu;
	struct sha2_entry {
		bool valid;
		uint8_t d2[SHA256_LEN]; /* SHA256(SHA256(password)) */
	} e[];
};

struct user_table {
	_Atomic int refs;
	size_t n;
	struct sha2_cache *sha2;
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
/*
 * Whether the user called name may log in with caching_sha2_password: not a
 * known user with only a password_hash (the proxy logs in to backends with
 * SHA1(password), which that user's fast authentication would not give: it
 * is switched to mysql_native_password). An unknown name may (and fails
 * as a wrong password does).
 */
bool users_sha2_able(const struct user_table *t, const char *name);
/* Fast authentication: true when the cache holds the digest of the user
 * called name and reply (n bytes) answers scramble with it; stage1 gets
 * SHA1(password) from the table. False: full authentication follows. */
bool users_sha2_fast(const struct user_table *t, const char *name, const uint8_t *scramble,
                     const uint8_t *reply, size_t n, uint8_t stage1[SHA1_LEN]);
/* Full authentication: whether pw (len bytes, the password in clear) is the
 * password of the user called name; then its digest goes to the cache and
 * stage1 gets SHA1(pw). The same work for an unknown name. */
bool users_sha2_full(const struct user_table *t, const char *name, const char *pw, size_t len,
                     uint8_t stage1[SHA1_LEN]);
/* The password of the user called name for a backend's
 * caching_sha2_password (its length in *len), or NULL when the table has
 * only its password_hash, or no such user. */
const char *users_password(const struct user_table *t, const char *name, size_t *len);
/* What changed from old to now, as "added a, b; removed c; password changed
 * for d" (empty when nothing did). */
void users_diff(const struct user_table *old, const struct user_table *now, char *out, size_t len);

#endif
