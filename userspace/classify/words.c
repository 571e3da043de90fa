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

struct word words[KW__COUNT + 700];
static size_t nwords;
uint16_t words_slots[WORDS_SLOTS]; /* index + 1 into words, 0 = empty */
static pthread_once_t once = PTHREAD_ONCE_INIT;

/*
 * Keys: a word is read 8 bytes at a time into little-endian uint64_t and
 * "folded" by OR-ing 0x20 into every byte. For word characters
 * ([A-Za-z0-9_$] and bytes >= 0x80) this maps upper to lower case and
 * nothing else together that could make a non-keyword equal a keyword
 * (keywords are ASCII; '_' folds to 0x7f, which is no word character), so
 * comparing folded keys is a case-insensitive compare of whole 8-byte
 * chunks, and one multiply hashes a word.
 */
static struct word *find_exact(const char *name, size_t n)
{
	uint64_t k0 = words_key((const unsigned char *)name, n, 0);

	for (uint32_t i = words_slot(k0, n); words_slots[i]; i = (i + 1) & (WORDS_SLOTS - 1)) {
		struct word *w = &words[words_slots[i] - 1];

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
	for (size_t c = 0; c * 8 < n; c++)
		w->key[c] = words_key((const unsigned char *)name + 8 * c, n - 8 * c, 0);
	for (i = words_slot(w->key[0], n); words_slots[i]; i = (i + 1) & (WORDS_SLOTS - 1))
		;
	words_slots[i] = (uint16_t)nwords;
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
#define R FN_R
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
#undef R
}

bool words_ready;

void words_init_slow(void)
{
	pthread_once(&once, build);
	__atomic_store_n(&words_ready, true, __ATOMIC_RELEASE);
}
