/*
 * words.h - the keyword and builtin function recognizer.
 *
 * One hash table holds every word of keywords.def and functions.def. It is
 * filled once (pthread_once) into static storage and then only read, so a
 * lookup is thread-safe and allocates nothing: FNV-1a over the uppercased
 * bytes, open addressing, at most a few probes.
 */
#ifndef MYSTEER_CLASSIFY_WORDS_H
#define MYSTEER_CLASSIFY_WORDS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

enum kw {
	KW_NONE = 0,
#define KW(name, flags) KW_##name,
#include "classify/keywords.def"
#undef KW
	KW__COUNT
};

enum { KWF_N = 1, KWF_T = 2 }; /* keyword flags N and T of keywords.def */

enum fn_class { FN_NONE = 0, FN_P, FN_W, FN_C, FN_S, FN_L, FN_R };

struct word {
	const char *name;
	uint64_t key[5]; /* the name, 8 bytes a word, folded (see words_fold) */
	uint8_t len;
	uint8_t kwf; /* KWF_N | KWF_T */
	uint8_t fn;  /* enum fn_class */
	uint16_t kw; /* enum kw */
};

#define WORD_MAX 40 /* longer words are neither keywords nor builtins */

#define WORDS_SLOTS 4096 /* power of two, load factor < 0.25: short probes */
extern struct word words[];
extern uint16_t words_slots[WORDS_SLOTS];

extern bool words_ready;
void words_init_slow(void);

/* Once per call of cls_classify: an acquire load once the table is built
 * (pthread_once itself costs a call and more on every statement). */
static inline void words_init(void)
{
	if (!__atomic_load_n(&words_ready, __ATOMIC_ACQUIRE))
		words_init_slow();
}

#define FOLD 0x2020202020202020ull

static inline uint64_t words_key(const unsigned char *s, size_t n, size_t avail)
{
	uint64_t k = 0;

	if (avail >= 8) {
		memcpy(&k, s, 8);
		if (n < 8)
			k &= ~0ull >> (64 - 8 * n);
	} else {
		for (size_t i = 0; i < n && i < 8; i++)
			k |= (uint64_t)s[i] << (8 * i);
	}
	return k | (FOLD & (~0ull >> (n < 8 ? 64 - 8 * n : 0)));
}

static inline uint32_t words_slot(uint64_t k0, size_t n)
{
	return (uint32_t)(((k0 ^ n) * 0x9e3779b97f4a7c15ull) >> (64 - 12));
}

/* s[0..n) as it appears in the statement (any case); NULL if unknown.
 * s[0..avail) may be read (avail >= n): lets the lookup load 8 bytes at a
 * time without a copy when the buffer goes on after the word. Inline: it
 * runs for nearly every word of every statement. */
static inline __attribute__((always_inline)) const struct word *words_find(const unsigned char *s,
                                                                           size_t n, size_t avail)
{
	uint64_t k0;

	if (n > WORD_MAX || n == 0)
		return NULL;
	k0 = words_key(s, n, avail);
	for (uint32_t i = words_slot(k0, n); words_slots[i]; i = (i + 1) & (WORDS_SLOTS - 1)) {
		const struct word *w = &words[words_slots[i] - 1];
		size_t c;

		if (w->len != n || w->key[0] != k0)
			continue;
		for (c = 1; c * 8 < n; c++)
			if (w->key[c] != words_key(s + 8 * c, n - 8 * c, avail - 8 * c))
				break;
		if (c * 8 >= n)
			return w;
	}
	return NULL;
}

#endif
