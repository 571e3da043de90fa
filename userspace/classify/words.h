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

#include <stddef.h>
#include <stdint.h>

enum kw {
	KW_NONE = 0,
#define KW(name, flags) KW_##name,
#include "classify/keywords.def"
#undef KW
	KW__COUNT
};

enum { KWF_N = 1, KWF_T = 2 }; /* keyword flags N and T of keywords.def */

enum fn_class { FN_NONE = 0, FN_P, FN_W, FN_C, FN_S, FN_L };

struct word {
	const char *name;
	uint8_t len;
	uint8_t kwf; /* KWF_N | KWF_T */
	uint8_t fn;  /* enum fn_class */
	uint16_t kw; /* enum kw */
};

#define WORD_MAX 40 /* longer words are neither keywords nor builtins */

void words_init(void);
/* s[0..n) as it appears in the statement (any case); NULL if unknown. */
const struct word *words_find(const unsigned char *s, size_t n);

#endif
