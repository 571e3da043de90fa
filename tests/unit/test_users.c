/*
 * test_users.c - the 6450 proxy's users table: lookup, the native password
 * check (an unknown name does the same verification as a wrong password,
 * against the table's dummy hash), and the one-line account of what a
 * reload changed; the caching_sha2_password cache.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "proxy/proto.h"
#include "proxy/users.h"

static const uint8_t scramble[SCRAMBLE_LEN] = "abcdefghij0123456789";

/* A config holding only users, name=password pairs (NULL password: only a
 * hash, of "hashed"). */
static struct config *users_config(const char *const *pairs, size_t n)
{
	struct config *c = calloc(1, sizeof(*c));

	ck_assert_ptr_nonnull(c);
	c->users = calloc(n, sizeof(*c->users));
	ck_assert_ptr_nonnull(c->users);
	for (size_t i = 0; i < n; i++) {
		struct config_user *u = &c->users[i];
		const char *pw = pairs[2 * i + 1];

		strcpy(u->name, pairs[2 * i]);
		u->has_hash = true;
		u->has_password = pw != NULL;
		if (pw)
			strcpy(u->password, pw);
		native_stage2(pw ? pw : "hashed", strlen(pw ? pw : "hashed"), u->hash_stage2);
	}
	c->nusers = n;
	return c;
}

static void config_gone(struct config *c)
{
	free(c->users);
	free(c);
}

/* What a client sends for password pw: SHA1(pw) XOR SHA1(scramble, SHA1(SHA1(pw))). */
static void reply_for(const char *pw, uint8_t reply[SHA1_LEN])
{
	uint8_t stage1[SHA1_LEN];

	sha1(pw, strlen(pw), NULL, 0, stage1);
	native_reply(scramble, stage1, reply);
}

START_TEST(find_known_and_unknown)
{
	static const char *const pairs[] = {"app", "app", "bob", NULL};
	struct config *cfg = users_config(pairs, 2);
	struct user_table *t = users_new(cfg);
	static const uint8_t zero[SHA1_LEN];
	bool known;

	ck_assert_ptr_nonnull(t);
	ck_assert_ptr_eq(users_find(t, "bob", &known), &t->users[1]);
	ck_assert(known);
	ck_assert(!t->users[1].has_password && t->users[0].has_password);
	ck_assert_ptr_eq(users_find(t, "nobody", &known), &t->dummy);
	ck_assert(!known);
	/* the dummy is checked like a user with a password hash */
	ck_assert(t->dummy.has_hash);
	ck_assert(memcmp(t->dummy.stage2, zero, SHA1_LEN) != 0);
	ck_assert_ptr_eq(users_ref(t), t);
	users_put(t);
	users_put(t);
	config_gone(cfg);
}
END_TEST

START_TEST(check_passwords)
{
	static const char *const pairs[] = {"app", "app", "bob", NULL};
	struct config *cfg = users_config(pairs, 2);
	struct user_table *t = users_new(cfg);
	uint8_t reply[SHA1_LEN], stage1[SHA1_LEN], want[SHA1_LEN];

	reply_for("app", reply);
	ck_assert(users_check(t, "app", scramble, reply, SHA1_LEN, stage1));
	sha1("app", 3, NULL, 0, want);
	ck_assert_mem_eq(stage1, want, SHA1_LEN); /* what backends are logged in with */
	ck_assert(!users_check(t, "bob", scramble, reply, SHA1_LEN, stage1));
	reply_for("hashed", reply);
	ck_assert(users_check(t, "bob", scramble, reply, SHA1_LEN, stage1)); /* hash only */
	reply_for("wrong", reply);
	ck_assert(!users_check(t, "app", scramble, reply, SHA1_LEN, stage1));
	ck_assert(!users_check(t, "app", scramble, reply, 0, stage1));
	users_put(t);
	config_gone(cfg);
}
END_TEST

/* An empty configured password takes the empty reply a client sends for
 * it; no other user takes an empty reply, an unknown name neither. */
START_TEST(empty_password)
{
	static const char *const pairs[] = {"nopw", "", "app", "app", "bob", NULL};
	struct config *cfg = users_config(pairs, 3);
	struct user_table *t = users_new(cfg);
	uint8_t reply[SHA1_LEN], stage1[SHA1_LEN];

	ck_assert(t->users[0].empty && !t->users[1].empty && !t->users[2].empty);
	ck_assert(users_check(t, "nopw", scramble, reply, 0, stage1));
	ck_assert(!users_check(t, "app", scramble, reply, 0, stage1));
	ck_assert(!users_check(t, "bob", scramble, reply, 0, stage1));
	ck_assert(!users_check(t, "nobody", scramble, reply, 0, stage1));
	reply_for("x", reply);
	ck_assert(!users_check(t, "nopw", scramble, reply, SHA1_LEN, stage1));
	users_put(t);
	config_gone(cfg);
}
END_TEST

/* No user enumeration by timing: an unknown name goes through the same
 * verification as a wrong password (against the dummy), which shows in the
 * stage1 it derives: reply XOR SHA1(scramble, dummy stage2). */
START_TEST(unknown_user_is_verified)
{
	static const char *const pairs[] = {"app", "app"};
	struct config *cfg = users_config(pairs, 1);
	struct user_table *t = users_new(cfg);
	uint8_t reply[SHA1_LEN], stage1[SHA1_LEN], h[SHA1_LEN];

	reply_for("app", reply);
	memset(stage1, 0, sizeof(stage1));
	ck_assert(!users_check(t, "nobody", scramble, reply, SHA1_LEN, stage1));
	sha1(scramble, SCRAMBLE_LEN, t->dummy.stage2, SHA1_LEN, h);
	for (int i = 0; i < SHA1_LEN; i++)
		h[i] ^= reply[i];
	ck_assert_mem_eq(stage1, h, SHA1_LEN);
	/* and two tables do not share a dummy */
	struct user_table *t2 = users_new(cfg);
	ck_assert(memcmp(t->dummy.stage2, t2->dummy.stage2, SHA1_LEN) != 0);
	users_put(t2);
	users_put(t);
	config_gone(cfg);
}
END_TEST

/* caching_sha2_password: no fast authentication before a full one filled
 * the cache; a hash-only user is not able; unknown names fail. */
START_TEST(sha2_cache)
{
	static const char *const pairs[] = {"app", "app", "bob", NULL};
	struct config *cfg = users_config(pairs, 2);
	struct user_table *t = users_new(cfg), *t2;
	uint8_t reply[SHA256_LEN], s1[SHA1_LEN], want[SHA1_LEN];

	ck_assert_ptr_nonnull(t);
	sha1("app", 3, NULL, 0, want);
	ck_assert(users_sha2_able(t, "app"));
	ck_assert(!users_sha2_able(t, "bob"));
	ck_assert(users_sha2_able(t, "nobody"));
	sha2_reply("app", 3, scramble, reply);
	ck_assert(!users_sha2_fast(t, "app", scramble, reply, SHA256_LEN, s1));
	/* a wrong password does not fill it */
	ck_assert(!users_sha2_full(t, "app", "apq", 3, s1));
	ck_assert(!users_sha2_fast(t, "app", scramble, reply, SHA256_LEN, s1));
	ck_assert(users_sha2_full(t, "app", "app", 3, s1));
	ck_assert_mem_eq(s1, want, SHA1_LEN);
	memset(s1, 0, sizeof(s1));
	ck_assert(users_sha2_fast(t, "app", scramble, reply, SHA256_LEN, s1));
	ck_assert_mem_eq(s1, want, SHA1_LEN);
	/* a wrong reply, a short one */
	reply[0] ^= 1;
	ck_assert(!users_sha2_fast(t, "app", scramble, reply, SHA256_LEN, s1));
	ck_assert(!users_sha2_fast(t, "app", scramble, reply, 5, s1));
	/* unknown names, and the hash-only user, never pass */
	ck_assert(!users_sha2_full(t, "nobody", "app", 3, s1));
	ck_assert(!users_sha2_full(t, "bob", "hashed", 6, s1));
	/* a new table (a reload) starts with an empty cache */
	t2 = users_new(cfg);
	ck_assert_ptr_nonnull(t2);
	sha2_reply("app", 3, scramble, reply);
	ck_assert(!users_sha2_fast(t2, "app", scramble, reply, SHA256_LEN, s1));
	ck_assert(users_sha2_fast(t, "app", scramble, reply, SHA256_LEN, s1));
	users_put(t2);
	users_put(t);
	config_gone(cfg);
}
END_TEST

START_TEST(diff_of_reload)
{
	static const char *const before[] = {"app", "app", "bob", "bob", "dan", NULL};
	static const char *const after[] = {"app", "app2", "carol", "c", "dan", NULL, "eve", "e"};
	struct config *c1 = users_config(before, 3), *c2 = users_config(after, 4);
	struct user_table *t1 = users_new(c1), *t2 = users_new(c2), *t3 = users_new(c2);
	char out[256];

	users_diff(t1, t2, out, sizeof(out));
	ck_assert_str_eq(out, "added carol, eve; removed bob; password changed for app");
	users_diff(t2, t3, out, sizeof(out));
	ck_assert_str_eq(out, "");
	users_diff(t1, t2, out, 12); /* cut, still a string */
	ck_assert_int_le(strlen(out), 11);
	users_put(t1);
	users_put(t2);
	users_put(t3);
	config_gone(c1);
	config_gone(c2);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("users");
	TCase *tc = tcase_create("users");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, find_known_and_unknown);
	tcase_add_test(tc, check_passwords);
	tcase_add_test(tc, empty_password);
	tcase_add_test(tc, unknown_user_is_verified);
	tcase_add_test(tc, diff_of_reload);
	tcase_add_test(tc, sha2_cache);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
