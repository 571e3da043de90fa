/*
 * words.c - builds the keyword/builtin hash table from the X-macro tables.
 *
 * Generated at start-up rather than by a build-time generator: the table is
 * ~900 words, built in microseconds, and keeping keywords.def/functions.def as
 * the only source avoids a generated file to keep in sync.
 */
#include <pthread.h>
#include <string.h>

#include "classify/words.h"

#define SLOTS 4096 /* power of two, load factor < 0.25: short probes */

static struct word words[KW__COUNT + 700];
static size_t nwords;
static uint16_t slots[SLOTS]; /* index + 1 into words, 0 = empty */
static pthread_once_t once = PTHREAD_ONCE_INIT;

static uint32_t hash_upper(const unsigned char *s, size_t n)
{
	uint32_t h = 2166136261u;

	for (size_t i = 0; i < n; i++) {
		unsigned char c = s[i];

		if (c >= 'a' && c <= 'z')
			c -= 32;
		h = (h ^ c) * 16777619u;
	}
	return h;
}

static struct word *find_exact(const char *name, size_t n)
{
	uint32_t h = hash_upper((const unsigned char *)name, n);

	for (uint32_t i = h & (SLOTS - 1); slots[i]; i = (i + 1) & (SLOTS - 1)) {
		struct word *w = &words[slots[i] - 1];

		if (w->len == n && memcmp(w->name, name, n) == 0)
			return w;
	}
	return NULL;
}

static struct word *insert(const char *name)
{
	size_t n = strlen(name);
	struct word *w = find_exact(name, n);
	uint32_t i;

	if (w)
		return w;
	if (nwords >= sizeof(words) / sizeof(words[0]) || n > WORD_MAX)
		return NULL; /* cannot happen with the tables as written */
	w = &words[nwords++];
	w->name = name;
	w->len = (uint8_t)n;
	for (i = hash_upper((const unsigned char *)name, n) & (SLOTS - 1); slots[i];
	     i = (i + 1) & (SLOTS - 1))
		;
	slots[i] = (uint16_t)nwords;
	return w;
}

static void build(void)
{
	struct word *w;

#define N KWF_N
#define T KWF_T
#define KW(name, flags)                                                                            \
	w = insert(#name);                                                                         \
	if (w) {                                                                                   \
		w->kw = KW_##name;                                                                 \
		w->kwf = (flags);                                                                  \
	}
#include "classify/keywords.def"
#undef KW
#undef N
#undef T
#define P FN_P
#define W FN_W
#define C FN_C
#define S FN_S
#define L FN_L
#define FN(name, cls)                                                                              \
	w = insert(#name);                                                                         \
	if (w)                                                                                     \
		w->fn = (cls);
#include "classify/functions.def"
#undef FN
#undef P
#undef W
#undef C
#undef S
#undef L
}

void words_init(void)
{
	pthread_once(&once, build);
}

const struct word *words_find(const unsigned char *s, size_t n)
{
	uint32_t h = 2166136261u;
	unsigned char up[WORD_MAX];

	if (n > WORD_MAX)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = s[i];

		if (c >= 'a' && c <= 'z')
			c -= 32;
		up[i] = c;
		h = (h ^ c) * 16777619u;
	}
	for (uint32_t i = h & (SLOTS - 1); slots[i]; i = (i + 1) & (SLOTS - 1)) {
		const struct word *w = &words[slots[i] - 1];

		if (w->len == n && memcmp(w->name, up, n) == 0)
			return w;
	}
	return NULL;
}
