/*
 * users.c - see users.h.
 */
#define _GNU_SOURCE
#include "proxy/users.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

struct user_table *users_new(const struct config *cfg)
{
	struct user_table *t = calloc(1, sizeof(*t) + cfg->nusers * sizeof(t->users[0]));

	if (!t)
		return NULL;
	if (getrandom(t->dummy.stage2, SHA1_LEN, 0) != SHA1_LEN) {
		free(t);
		return NULL;
	}
	t->dummy.has_hash = true;
	for (size_t i = 0; i < cfg->nusers; i++) {
		struct proxy_user *u = &t->users[i];
		const struct config_user *cu = &cfg->users[i];

		snprintf(u->name, sizeof(u->name), "%s", cu->name);
		memcpy(u->stage2, cu->hash_stage2, SHA1_LEN);
		u->has_hash = cu->has_hash;
		u->has_password = cu->has_password;
		u->empty = cu->has_password && !cu->password[0];
		if (cu->has_password)
			sha1(cu->password, strlen(cu->password), NULL, 0, u->stage1);
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
