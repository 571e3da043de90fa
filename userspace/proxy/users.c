/*
 * users.c - see users.h.
 */
#define _GNU_SOURCE
#include "proxy/users.h"

#include <openssl/crypto.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

struct user_table *users_new(const struct config *cfg)
{
	struct user_table *t = calloc(1, sizeof(*t) + cfg->nusers * sizeof(t->users[0]));

	if (!t)
		return NULL;
	t->sha2 = calloc(1, sizeof(*t->sha2) + (cfg->nusers + 1) * sizeof(t->sha2->e[0]));
	if (!t->sha2 || getrandom(t->dummy.stage2, SHA1_LEN, 0) != SHA1_LEN) {
		free(t->sha2);
		free(t);
		return NULL;
	}
	pthread_mutex_init(&t->sha2->mu, NULL);
	t->dummy.has_hash = true;
	for (size_t i = 0; i < cfg->nusers; i++) {
		struct proxy_user *u = &t->users[i];
		const struct config_user *cu = &cfg->users[i];

		snprintf(u->name, sizeof(u->name), "%s", cu->name);
		memcpy(u->stage2, cu->hash_stage2, SHA1_LEN);
		u->has_hash = cu->has_hash;
		u->has_password = cu->has_password;
		u->empty = cu->has_password && !cu->password[0];
		if (cu->has_password) {
			sha1(cu->password, strlen(cu->password), NULL, 0, u->stage1);
			snprintf(u->password, sizeof(u->password), "%s", cu->password);
		}
	}
	t->n = cfg->nusers;
	atomic_init(&t->refs, 1);
	return t;
}

struct user_table *users_ref(struct user_table *t)
{
	atomic_fetch_add(&t->refs, 1);
	return t;
}

void users_put(struct user_table *t)
{
	if (!t || atomic_fetch_sub(&t->refs, 1) != 1)
		return;
	pthread_mutex_destroy(&t->sha2->mu);
	explicit_bzero(t->sha2, sizeof(*t->sha2) + (t->n + 1) * sizeof(t->sha2->e[0]));
	free(t->sha2);
	explicit_bzero(t, sizeof(*t) + t->n * sizeof(t->users[0]));
	free(t);
}

const struct proxy_user *users_find(const struct user_table *t, const char *name, bool *known)
{
	const struct proxy_user *found = &t->dummy;

	for (size_t i = 0; i < t->n; i++)
		if (!strcmp(t->users[i].name, name))
			found = &t->users[i];
	*known = found != &t->dummy;
	return found;
}

bool users_check(const struct user_table *t, const char *name, const uint8_t *scramble,
                 const uint8_t *reply, size_t n, uint8_t stage1[SHA1_LEN])
{
	bool known;
	const struct proxy_user *u = users_find(t, name, &known);
	static const uint8_t none[SHA1_LEN];
	/* first, whoever it is: the work a wrong password costs */
	bool ok =
	    native_verify(scramble, n ? reply : none, n ? n : SHA1_LEN, u->stage2, stage1) == 0;

	if (n == 0)
		ok = u->empty;

	return ok && known && u->has_hash;
}

bool users_sha2_able(const struct user_table *t, const char *name)
{
	bool known;
	const struct proxy_user *u = users_find(t, name, &known);

	return !known || u->has_password;
}

/* The cache entry of u (the dummy's is the last). */
static struct sha2_entry *sha2_entry(const struct user_table *t, const struct proxy_user *u)
{
	return &t->sha2->e[u == &t->dummy ? t->n : (size_t)(u - t->users)];
}

bool users_sha2_fast(const struct user_table *t, const char *name, const uint8_t *scramble,
                     const uint8_t *reply, size_t n, uint8_t stage1[SHA1_LEN])
{
	bool known, valid;
	const struct proxy_user *u = users_find(t, name, &known);
	struct sha2_entry *e = sha2_entry(t, u);
	uint8_t d2[SHA256_LEN];

	pthread_mutex_lock(&t->sha2->mu);
	valid = e->valid;
	memcpy(d2, e->d2, SHA256_LEN);
	pthread_mutex_unlock(&t->sha2->mu);
	if (!valid || !known || !u->has_password || sha2_verify(scramble, reply, n, d2) < 0)
		return false;
	memcpy(stage1, u->stage1, SHA1_LEN);
	return true;
}

bool users_sha2_full(const struct user_table *t, const char *name, const char *pw, size_t len,
                     uint8_t stage1[SHA1_LEN])
{
	bool known, ok;
	const struct proxy_user *u = users_find(t, name, &known);
	struct sha2_entry *e = sha2_entry(t, u);
	uint8_t s1[SHA1_LEN], s2[SHA1_LEN], d2[SHA256_LEN];

	sha1(pw, len, NULL, 0, s1);
	sha1(s1, SHA1_LEN, NULL, 0, s2);
	ok = CRYPTO_memcmp(s2, u->stage2, SHA1_LEN) == 0 && known && u->has_password;
	if (ok) {
		sha2_digest2(pw, len, d2);
		pthread_mutex_lock(&t->sha2->mu);
		memcpy(e->d2, d2, SHA256_LEN);
		e->valid = true;
		pthread_mutex_unlock(&t->sha2->mu);
		memcpy(stage1, s1, SHA1_LEN);
	}
	explicit_bzero(s1, sizeof(s1));
	return ok;
}

const char *users_password(const struct user_table *t, const char *name, size_t *len)
{
	bool known;
	const struct proxy_user *u = users_find(t, name, &known);

	if (!known || !u->has_password)
		return NULL;
	*len = strlen(u->password);
	return u->password;
}

static void add_name(char *out, size_t len, bool *first, const char *what, const char *name)
{
	size_t used = strlen(out);

	if (used >= len)
		return;
	if (*first)
		snprintf(out + used, len - used, "%s%s %s", used ? "; " : "", what, name);
	else
		snprintf(out + used, len - used, ", %s", name);
	*first = false;
}

void users_diff(const struct user_table *old, const struct user_table *now, char *out, size_t len)
{
	bool first = true, known;

	out[0] = 0;
	for (size_t i = 0; i < now->n; i++)
		if (users_find(old, now->users[i].name, &known), !known)
			add_name(out, len, &first, "added", now->users[i].name);
	first = true;
	for (size_t i = 0; i < old->n; i++)
		if (users_find(now, old->users[i].name, &known), !known)
			add_name(out, len, &first, "removed", old->users[i].name);
	first = true;
	for (size_t i = 0; i < now->n; i++) {
		const struct proxy_user *u = &now->users[i], *o = users_find(old, u->name, &known);
		if (known && (memcmp(o->stage2, u->stage2, SHA1_LEN) ||
		              o->has_hash != u->has_hash || o->has_password != u->has_password))
			add_name(out, len, &first, "password changed for", u->name);
	}
}
