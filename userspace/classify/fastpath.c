/*
 * fastpath.c - the classifier's fast path for plain SELECT/INSERT/UPDATE/
 * DELETE: classifies 32 or 16 bytes at a time with AVX2 or SSSE3 nibble
 * tables, chosen at run time, or one byte at a time elsewhere.
 *
 * It gives up at anything it does not handle itself and the grammar
 * (classify.c) decides; when it does decide, the result is the grammar's:
 * the unit tests and the fuzzer compare both.
 */
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#if defined(__x86_64__)
#include <immintrin.h> /* SSSE3 and AVX2, used only behind a runtime check */
#include <stdlib.h>
#define HAVE_NIBBLE_SCAN 1
#endif

#include "classify/classify_int.h"
#include "classify/lex.h"
#include "classify/words.h"

/* ---- fast path ------------------------------------------------------- */

/*
 * Most statements of an OLTP application are plain SELECT/INSERT/UPDATE/
 * DELETE with nothing in them that the grammar above would act on. The fast
 * path checks that without building tokens, looking words up only where it
 * must (a word before "("), and screens the other words by their first
 * letters and length only (see fast_body_avx2 for the main variant; the
 * SSE2 and byte-loop variants below are the fallback). It gives up (returns
 * false) at anything it does not handle itself (comments, variables, ";",
 * qualified or quoted calls, a word that might be FOR/INTO/LOCK/...), and the
 * full parser decides. When it does decide, the result is the one the full
 * parser gives: the unit tests and the fuzzer compare both.
 */
#define SEL_VEC_MAX 8192 /* longest SELECT for fast_body_select_vec */

enum fc { F_OTHER = 0, F_SPACE, F_WORD, F_QUOTE, F_LP, F_DOT, F_DASH, F_SLASH, F_BAIL };

static const uint8_t fclass[256] = {
    [0] = F_BAIL,
    ['\t'] = F_SPACE,
    ['\n'] = F_SPACE,
    ['\v'] = F_SPACE,
    ['\f'] = F_SPACE,
    ['\r'] = F_SPACE,
    [' '] = F_SPACE,
    ['0' ... '9'] = F_WORD,
    ['A' ... 'Z'] = F_WORD,
    ['a' ... 'z'] = F_WORD,
    ['_'] = F_WORD,
    ['$'] = F_WORD,
    [0x80 ... 0xff] = F_WORD,
    ['\''] = F_QUOTE,
    ['"'] = F_QUOTE,
    ['`'] = F_QUOTE,
    ['('] = F_LP,
    ['.'] = F_DOT,
    ['-'] = F_DASH,
    ['/'] = F_SLASH,
    ['@'] = F_BAIL,
    [';'] = F_BAIL,
    ['#'] = F_BAIL,
};

/* Could this word be one that acts inside a SELECT without a "(": FOR INTO
 * LOCK SHARE UPDATE DELETE INSERT REPLACE? By length and first letter. */
static inline bool fast_sensitive(const uint8_t *w, size_t n)
{
	static const uint32_t first[8] = {
	    [3] = 1u << ('f' - 'a'),
	    [4] = 1u << ('i' - 'a') | 1u << ('l' - 'a'),
	    [5] = 1u << ('s' - 'a'),
	    [6] = 1u << ('u' - 'a') | 1u << ('d' - 'a') | 1u << ('i' - 'a'),
	    [7] = 1u << ('r' - 'a'),
	};
	unsigned c = (unsigned)(w[0] | 0x20) - 'a';

	return n < 8 && c < 26 && (first[n] >> c) & 1;
}

enum { L_OTHER = 0, L_WORD, L_QUOTED };

/* A word before "(" in the fast path: a builtin free of side effects, a
 * keyword that is no call, or a name in table context (INTO t (a)). */
static bool fast_call_ok(const uint8_t *w1, size_t l1, const uint8_t *w0, size_t l0,
                         const uint8_t *end)
{
	const struct word *w = words_find(w1, l1, (size_t)(end - w1)), *t;

	if (w && w->fn)
		return w->fn == FN_P;
	if (w && (w->kwf & KWF_N))
		return true;
	t = w0 ? words_find(w0, l0, (size_t)(end - w0)) : NULL;
	return t && (t->kwf & KWF_T);
}

static bool fast_body_scalar(const uint8_t *w1, size_t l1, const uint8_t *p, const uint8_t *end,
                             bool query);
static bool fast_body_dml(const uint8_t *start, const uint8_t *p, const uint8_t *end);
static bool fast_body_select_vec(const uint8_t *s, size_t len, size_t pos);

#define K8(a, b, c, d, e, f, g, h)                                                                 \
	((uint64_t)(a) | (uint64_t)(b) << 8 | (uint64_t)(c) << 16 | (uint64_t)(d) << 24 |          \
	 (uint64_t)(e) << 32 | (uint64_t)(f) << 40 | (uint64_t)(g) << 48 | (uint64_t)(h) << 56)

/*
 * The first word, when the buffer starts with it (no leading space or
 * comment): one 8-byte load folded by OR 0x20 and compared with the verbs
 * of an OLTP mix, instead of a byte loop and a hash lookup. OR 0x20 maps
 * only 'X' and 'x' to 'x' for a letter x, so the compare is exact for the
 * letters; the byte after the word must be no identifier byte. Returns the
 * keyword (length in *l1), or 0: the generic head decides.
 */
static inline unsigned fast_head(const uint8_t *p, size_t n, size_t *l1)
{
	uint64_t k;
	uint32_t k4;

	if (n < 8) {
		if (n != 5 && n != 6)
			return 0;
		memcpy(&k4, p, 4);
		k = k4 | (uint64_t)p[4] << 32 | (n == 6 ? (uint64_t)p[5] << 40 : 0);
		k |= FOLD >> (64 - 8 * n);
		*l1 = n;
		if (k == K8('b', 'e', 'g', 'i', 'n', 0, 0, 0))
			return KW_BEGIN;
		if (k == K8('c', 'o', 'm', 'm', 'i', 't', 0, 0))
			return KW_COMMIT;
		return 0;
	}
	memcpy(&k, p, 8);
	k |= FOLD;
	*l1 = 6;
	if (!wordc[p[6]]) {
		switch (k & 0xffffffffffffull) {
		case K8('s', 'e', 'l', 'e', 'c', 't', 0, 0):
			return KW_SELECT;
		case K8('i', 'n', 's', 'e', 'r', 't', 0, 0):
			return KW_INSERT;
		case K8('u', 'p', 'd', 'a', 't', 'e', 0, 0):
			return KW_UPDATE;
		case K8('d', 'e', 'l', 'e', 't', 'e', 0, 0):
			return KW_DELETE;
		case K8('c', 'o', 'm', 'm', 'i', 't', 0, 0):
			return KW_COMMIT;
		}
		return 0;
	}
	*l1 = 7;
	if (!wordc[p[7]] && (k & 0xffffffffffffffull) == K8('r', 'e', 'p', 'l', 'a', 'c', 'e', 0))
		return KW_REPLACE;
	*l1 = 8;
	if ((n == 8 || !wordc[p[8]]) && k == K8('r', 'o', 'l', 'l', 'b', 'a', 'c', 'k'))
		return KW_ROLLBACK;
	return 0;
}

static bool dml_paren_ok(const uint8_t *start, const uint8_t *lp, const uint8_t *end);

#if HAVE_NIBBLE_SCAN
/*
 * The body scan of the fast path with SSSE3 (runtime check): each byte is
 * classified by two PSHUFB lookups, one on its low and one on its high
 * nibble, AND-ed: a bit is set when the byte is in that bit's rectangle of
 * the nibble plane. 16 bytes cost about a dozen instructions for all the
 * classes at once; 64-byte chunks give 64-bit masks. Only events and the
 * starts of words whose first letter could begin a sensitive word
 * (fast_sensitive: d f i l r s u) are visited; every other byte is skipped
 * without a branch. Decides exactly as fast_body_select_vec (query) or
 * fast_body_dml.
 *
 * Table A: 0 [A-Oa-o]  1 [P-Zp-z]  2 [0-9]  3 0x80-0xff  4 '_'  5 '$'
 *          6 [DFILdfil]  7 [RSUrsu]           (identifier byte: bits 0-5)
 * Table B: 0 " # ' ( - /  1 .  2 ;  3 NUL @ `           (events)
 */
#define NB_W1   0x01
#define NB_W2   0x02
#define NB_DIG  0x04
#define NB_HIGH 0x08
#define NB_UND  0x10
#define NB_DOL  0x20
#define NB_SA   0x40
#define NB_SB   0x80

static const uint8_t nb_alo[16] = {
    NB_W2 | NB_DIG | NB_HIGH,
    NB_W1 | NB_W2 | NB_DIG | NB_HIGH,
    NB_W1 | NB_W2 | NB_DIG | NB_HIGH | NB_SB,
    NB_W1 | NB_W2 | NB_DIG | NB_HIGH | NB_SB,
    NB_W1 | NB_W2 | NB_DIG | NB_HIGH | NB_DOL | NB_SA,
    NB_W1 | NB_W2 | NB_DIG | NB_HIGH | NB_SB,
    NB_W1 | NB_W2 | NB_DIG | NB_HIGH | NB_SA,
    NB_W1 | NB_W2 | NB_DIG | NB_HIGH,
    NB_W1 | NB_W2 | NB_DIG | NB_HIGH,
    NB_W1 | NB_W2 | NB_DIG | NB_HIGH | NB_SA,
    NB_W1 | NB_W2 | NB_HIGH,
    NB_W1 | NB_HIGH,
    NB_W1 | NB_HIGH | NB_SA,
    NB_W1 | NB_HIGH,
    NB_W1 | NB_HIGH,
    NB_W1 | NB_HIGH | NB_UND,
};
static const uint8_t nb_ahi[16] = {
    [2] = NB_DOL,        [3] = NB_DIG,        [4] = NB_W1 | NB_SA,  [5] = NB_W2 | NB_UND | NB_SB,
    [6] = NB_W1 | NB_SA, [7] = NB_W2 | NB_SB, [8 ... 15] = NB_HIGH,
};
static const uint8_t nb_blo[16] = {
    [0] = 8, [2] = 1, [3] = 1, [7] = 1, [8] = 1, [0xb] = 4, [0xd] = 1, [0xe] = 2, [0xf] = 1};
static const uint8_t nb_bhi[16] = {[0] = 8, [2] = 1 | 2, [3] = 4, [4] = 8, [6] = 8};

/* A word starting at s[c] whose first letter passed the nibble screen:
 * could it be one that acts in a SELECT without "(" (FOR INTO LOCK SHARE
 * UPDATE DELETE INSERT REPLACE)? The second letter rules out most words
 * (FROM, id, sbtest1) before the length is counted; the rest is
 * fast_sensitive's screen by length and first letter. */
static inline bool nb_sensitive(const uint8_t *s, size_t len, size_t c)
{
	static const uint8_t second[32] = {
	    ['d' & 31] = 'e', ['f' & 31] = 'o', ['i' & 31] = 'n', ['l' & 31] = 'o',
	    ['r' & 31] = 'e', ['s' & 31] = 'h', ['u' & 31] = 'p',
	};
	size_t n = 1;

	if (c + 1 >= len || (s[c + 1] | 0x20) != second[s[c] & 31])
		return false;
	while (n < 8 && c + n < len && wordc[s[c + n]])
		n++;
	return fast_sensitive(s + c, n);
}

/* The closing quote of a string or quoted name opened at p[-1], as
 * skip_quoted (a backslash escapes the next byte except in `names`, a doubled
 * quote is one), 16 bytes a step; the last step is loaded ending at s + len
 * (len >= 16) and the bytes before p masked off, instead of a byte loop.
 * Returns the offset after the closing quote, or 0 when unterminated. */
__attribute__((target("sse2"))) static size_t nb_skip_quoted16(const uint8_t *s, size_t len,
                                                               size_t i, uint8_t q)
{
	const __m128i vq = _mm_set1_epi8((char)q);
	const __m128i vb = _mm_set1_epi8(q == '`' ? (char)q : '\\');

	for (;;) {
		unsigned m = 0;
		size_t at;

		while (i + 16 <= len) {
			__m128i v = _mm_loadu_si128((const __m128i *)(s + i));

			m = (unsigned)_mm_movemask_epi8(
			    _mm_or_si128(_mm_cmpeq_epi8(v, vq), _mm_cmpeq_epi8(v, vb)));
			if (m)
				break;
			i += 16;
		}
		at = i;
		if (!m) { /* fewer than 16 bytes left */
			__m128i v;

			if (i >= len)
				return 0;
			at = len - 16;
			v = _mm_loadu_si128((const __m128i *)(s + at));
			m = (unsigned)_mm_movemask_epi8(
			    _mm_or_si128(_mm_cmpeq_epi8(v, vq), _mm_cmpeq_epi8(v, vb)));
			m &= ~0u << (i - at);
			if (!m)
				return 0;
		}
		i = at + (size_t)__builtin_ctz(m);
		if (s[i] != q) { /* backslash: escapes the next byte */
			i += 2;
			continue;
		}
		if (i + 1 < len && s[i + 1] == q) { /* doubled quote */
			i += 2;
			continue;
		}
		return i + 1;
	}
}

__attribute__((target("avx2"))) static size_t nb_skip_quoted32(const uint8_t *s, size_t len,
                                                               size_t i, uint8_t q)
{
	const __m256i vq = _mm256_set1_epi8((char)q);
	const __m256i vb = _mm256_set1_epi8(q == '`' ? (char)q : '\\');

	for (;;) {
		unsigned m = 0; /* 32 bits */
		size_t at;

		while (i + 32 <= len) {
			__m256i v = _mm256_loadu_si256((const __m256i *)(s + i));

			m = (unsigned)_mm256_movemask_epi8(
			    _mm256_or_si256(_mm256_cmpeq_epi8(v, vq), _mm256_cmpeq_epi8(v, vb)));
			if (m)
				break;
			i += 32;
		}
		at = i;
		if (!m) { /* fewer than 16 bytes left */
			__m256i v;

			if (i >= len)
				return 0;
			at = len - 32;
			v = _mm256_loadu_si256((const __m256i *)(s + at));
			m = (unsigned)_mm256_movemask_epi8(
			    _mm256_or_si256(_mm256_cmpeq_epi8(v, vq), _mm256_cmpeq_epi8(v, vb)));
			m &= ~0u << (i - at); /* i - at < 32 */
			if (!m)
				return 0;
		}
		i = at + (size_t)__builtin_ctz(m);
		if (s[i] != q) { /* backslash: escapes the next byte */
			i += 2;
			continue;
		}
		if (i + 1 < len && s[i + 1] == q) { /* doubled quote */
			i += 2;
			continue;
		}
		return i + 1;
	}
}

/* One block of the body scan: events (quotes, "(", "-", "/" and the bytes
 * that give up; "." too in a query) and, in a query, the starts of words
 * whose first letter passed the screen, as bit masks of the block at s + at.
 * The tables are broadcast to every 16-byte lane. */
struct nbm {
	uint64_t ev, cand;
};

#define NB_CLASSIFY(V, SET1, LOADT, AND, SRLI, SHUF, CMPEQ, ADD, MOVMSK, ZERO, FULL)               \
	do {                                                                                       \
		const V nib = SET1(0x0f), zero = ZERO();                                           \
		V lo = AND(v, nib), hi = AND(SRLI(v, 4), nib);                                     \
		V b = AND(SHUF(LOADT(nb_blo), lo), SHUF(LOADT(nb_bhi), hi));                       \
                                                                                                   \
		b = AND(b, SET1(query ? (char)0xff : (char)0xfd)); /* DML: "." is no event */      \
		m->ev = ~(uint64_t)(uint32_t)MOVMSK(CMPEQ(b, zero)) & (FULL);                      \
		m->cand = 0;                                                                       \
		if (query) {                                                                       \
			V a = AND(SHUF(LOADT(nb_alo), lo), SHUF(LOADT(nb_ahi), hi));               \
			uint64_t w =                                                               \
			    ~(uint64_t)(uint32_t)MOVMSK(CMPEQ(AND(a, SET1(0x3f)), zero)) & (FULL); \
			uint64_t sens = (uint32_t)MOVMSK(a) | (uint32_t)MOVMSK(ADD(a, a));         \
                                                                                                   \
			m->cand = w & ~((w << 1) | (at && wordc[s[at - 1]])) & sens;               \
		}                                                                                  \
	} while (0)

#define NB_LOADT16(t) _mm_loadu_si128((const __m128i *)(t))
__attribute__((target("ssse3"), always_inline)) static inline void
nb_cls16(const uint8_t *s, size_t at, bool query, struct nbm *m)
{
	__m128i v = _mm_loadu_si128((const __m128i *)(s + at));

	NB_CLASSIFY(__m128i, _mm_set1_epi8, NB_LOADT16, _mm_and_si128, _mm_srli_epi16,
	            _mm_shuffle_epi8, _mm_cmpeq_epi8, _mm_add_epi8, _mm_movemask_epi8,
	            _mm_setzero_si128, 0xffffull);
}

#define NB_LOADT32(t) _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(t)))
__attribute__((target("avx2"), always_inline)) static inline void
nb_cls32(const uint8_t *s, size_t at, bool query, struct nbm *m)
{
	__m256i v = _mm256_loadu_si256((const __m256i *)(s + at));

	NB_CLASSIFY(__m256i, _mm256_set1_epi8, NB_LOADT32, _mm256_and_si256, _mm256_srli_epi16,
	            _mm256_shuffle_epi8, _mm256_cmpeq_epi8, _mm256_add_epi8, _mm256_movemask_epi8,
	            _mm256_setzero_si256, 0xffffffffull);
}

/* s[0..len), len >= W, starts with the first word (pos bytes). Walks
 * W-byte blocks (the last one loaded ending at s + len, the bytes already
 * seen masked off): a block with no event and no candidate word start
 * costs its classification only. */
static inline __attribute__((always_inline)) bool
nb_body(const uint8_t *s, size_t len, size_t pos, bool query, unsigned W,
        void (*cls)(const uint8_t *, size_t, bool, struct nbm *))
{
	const uint8_t *end = s + len;

	while (pos < len) {
		size_t at = pos + W > len ? len - W : pos;
		uint64_t live = ~0ull << (pos - at); /* bytes not looked at yet */
		struct nbm m;

		cls(s, at, query, &m);
		for (;;) {
			unsigned e;
			uint64_t below;
			const uint8_t *p;

			m.ev &= live;
			e = m.ev ? (unsigned)__builtin_ctzll(m.ev) : W;
			below = m.cand & live & ((1ull << e) - 1);
			while (below) {
				if (nb_sensitive(s, len, at + (unsigned)__builtin_ctzll(below)))
					return false;
				below &= below - 1;
			}
			if (e == W) {
				pos = at + W;
				break;
			}
			p = s + at + e;
			switch (fclass[*p]) {
			case F_QUOTE: {
				size_t q = W == 32 ? nb_skip_quoted32(s, len, at + e + 1, *p)
				                   : nb_skip_quoted16(s, len, at + e + 1, *p);

				if (!q)
					return false;
				pos = q;
				break;
			}
			case F_LP:
				if (!dml_paren_ok(s, p, end))
					return false;
				pos = at + e + 1;
				break;
			case F_DASH:
				if (p + 1 < end && p[1] == '-')
					return false;
				pos = at + e + 1;
				break;
			case F_SLASH:
				if (p + 1 < end && p[1] == '*')
					return false;
				pos = at + e + 1;
				break;
			default: /* . @ ; # NUL */
				return false;
			}
			if (pos >= at + W)
				break;
			live = ~0ull << (pos - at);
		}
	}
	return true;
}

__attribute__((target("ssse3"))) static bool fast_body_ssse3(const uint8_t *s, size_t len,
                                                             size_t pos, bool query)
{
	return nb_body(s, len, pos, query, 16, nb_cls16);
}

__attribute__((target("avx2"))) static bool fast_body_avx2(const uint8_t *s, size_t len, size_t pos,
                                                           bool query)
{
	return nb_body(s, len, pos, query, 32, nb_cls32);
}

/* The widest scan this CPU has, found once; MYSTEER_CLASSIFY_SIMD=avx2,
 * ssse3 or sse2 caps it, so that the tests can run every variant on one
 * machine. */
enum { SIMD_UNKNOWN = 0, SIMD_SSE2, SIMD_SSSE3, SIMD_AVX2 };
static int simd_level_cached;

static int simd_detect(void)
{
	int l;
	const char *cap;

	__builtin_cpu_init();
	l = __builtin_cpu_supports("avx2")    ? SIMD_AVX2
	    : __builtin_cpu_supports("ssse3") ? SIMD_SSSE3
	                                      : SIMD_SSE2;
	cap = getenv("MYSTEER_CLASSIFY_SIMD");
	if (cap && !strcmp(cap, "sse2"))
		l = SIMD_SSE2;
	else if (cap && !strcmp(cap, "ssse3") && l > SIMD_SSSE3)
		l = SIMD_SSSE3;
	__atomic_store_n(&simd_level_cached, l, __ATOMIC_RELAXED);
	return l;
}

static inline int simd_level(void)
{
	int l = __atomic_load_n(&simd_level_cached, __ATOMIC_RELAXED);

	return __builtin_expect(l != SIMD_UNKNOWN, 1) ? l : simd_detect();
}
#endif

/* Could a select option start with c (the byte after SELECT and one space;
 * other spacing takes the long way)? */
static inline bool select_option_start(uint8_t c)
{
	uint8_t l = c | 0x20;

	return l == 's' || l == 'd' || l == 'a' || l == 'h' || fclass[c] == F_SPACE;
}

/* Whether SQL_CALC_FOUND_ROWS is among the select options at p (after the
 * leading SELECT): the parser then sets its flag. Words apart by spaces only,
 * as anything else makes the fast path give up or ends the options. */
static bool fast_calc_found_rows(const uint8_t *p, const uint8_t *end)
{
	for (;;) {
		const uint8_t *w;
		int o;

		while (p < end && fclass[*p] == F_SPACE)
			p++;
		for (w = p; p < end && wordc[*p];)
			p++;
		if (p == w)
			return false;
		o = select_option(w, (size_t)(p - w));
		if (o != 1)
			return o == 2;
	}
}

bool cls_fast_path(const uint8_t *p, const uint8_t *end, struct cls_result *out)
{
	const uint8_t *w1;
	size_t l1;
	const struct word *first;
	unsigned kw;
	bool query;

	kw = fast_head(p, (size_t)(end - p), &l1);
	if (kw) {
		w1 = p;
		p += l1;
	} else {
		while (p < end && fclass[*p] == F_SPACE)
			p++;
		if (p >= end || cclass[*p] != C_WORD)
			return false;
		w1 = p;
		while (p < end && wordc[*p])
			p++;
		l1 = (size_t)(p - w1);
		first = words_find(w1, l1, (size_t)(end - w1));
		if (!first)
			return false;
		kw = first->kw;
	}
	switch (kw) {
	case KW_BEGIN:
	case KW_COMMIT:
	case KW_ROLLBACK: /* alone: the transaction statements of every OLTP mix */
		while (p < end && fclass[*p] == F_SPACE)
			p++;
		if (p != end)
			return false;
		memset(out, 0, sizeof(*out));
		out->token = kw == KW_BEGIN ? CLS_BEGIN : CLS_END;
		out->reason = CLS_R_TRANSACTION;
		return true;
	case KW_SELECT:
		if (p + 1 < end && select_option_start(p[1]) && fast_calc_found_rows(p, end))
			return false;
		query = true;
		break;
	case KW_INSERT:
	case KW_UPDATE:
	case KW_DELETE:
	case KW_REPLACE:
		query = false;
		break;
	default:
		return false;
	}
#if HAVE_NIBBLE_SCAN
	if (end - w1 >= 32 && simd_level() >= SIMD_AVX2) {
		if (!fast_body_avx2(w1, (size_t)(end - w1), l1, query))
			return false;
	} else if (end - w1 >= 16 && simd_level() >= SIMD_SSSE3) {
		if (!fast_body_ssse3(w1, (size_t)(end - w1), l1, query))
			return false;
	} else
#endif
	    if (!query) {
		if (!fast_body_dml(w1, p, end))
			return false;
	}
#if defined(__SSE2__)
	else if (end - w1 >= 16 && end - w1 <= SEL_VEC_MAX) {
		if (!fast_body_select_vec(w1, (size_t)(end - w1), l1))
			return false;
	}
#endif
	else if (!fast_body_scalar(w1, l1, p, end, true)) {
		return false;
	}
	memset(out, 0, sizeof(*out));
	out->token = query ? CLS_READ : CLS_WRITE;
	out->reason = query ? CLS_R_SELECT : CLS_R_DML;
	return true;
}

/* Next byte a DML body must look at: quotes, "(", "-", "/" and the bytes
 * that make the fast path give up (@ ; # NUL). 16 bytes a step with SSE2. */
static inline const uint8_t *next_event(const uint8_t *p, const uint8_t *end)
{
#if defined(__SSE2__)
	while (end - p >= 16) {
		__m128i v = _mm_loadu_si128((const __m128i *)p);
		__m128i t = _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('\'')),
		                         _mm_cmpeq_epi8(v, _mm_set1_epi8('"')));
		unsigned m;

		t = _mm_or_si128(t, _mm_cmpeq_epi8(v, _mm_set1_epi8('`')));
		t = _mm_or_si128(t, _mm_cmpeq_epi8(v, _mm_set1_epi8('(')));
		t = _mm_or_si128(t, _mm_cmpeq_epi8(v, _mm_set1_epi8('-')));
		t = _mm_or_si128(t, _mm_cmpeq_epi8(v, _mm_set1_epi8('/')));
		t = _mm_or_si128(t, _mm_cmpeq_epi8(v, _mm_set1_epi8('@')));
		t = _mm_or_si128(t, _mm_cmpeq_epi8(v, _mm_set1_epi8(';')));
		t = _mm_or_si128(t, _mm_cmpeq_epi8(v, _mm_set1_epi8('#')));
		t = _mm_or_si128(t, _mm_cmpeq_epi8(v, _mm_setzero_si128()));
		m = (unsigned)_mm_movemask_epi8(t);
		if (m)
			return p + __builtin_ctz(m);
		p += 16;
	}
#endif
	while (p < end && fclass[*p] != F_QUOTE && fclass[*p] != F_LP && fclass[*p] != F_DASH &&
	       fclass[*p] != F_SLASH && fclass[*p] != F_BAIL)
		p++;
	return p;
}

/* "(" at lp in a DML body: looks back at the word before it (and the one
 * before that) with the rules of the scalar fast path. Each word is looked
 * back at by at most the two "(" after it: linear. */
static bool dml_paren_ok(const uint8_t *start, const uint8_t *lp, const uint8_t *end)
{
	const uint8_t *j = lp, *s1, *k, *s0;

	while (j > start && fclass[j[-1]] == F_SPACE)
		j--;
	if (j == start || fclass[j[-1]] == F_QUOTE)
		return j == start;
	if (!wordc[j[-1]])
		return true;
	for (s1 = j - 1; s1 > start && wordc[s1[-1]];)
		s1--;
	if (cclass[*s1] == C_DIGIT)
		return true;
	for (k = s1; k > start && fclass[k[-1]] == F_SPACE;)
		k--;
	if (k > start && k[-1] == '.')
		return false; /* db.fn( */
	if (k == start || !wordc[k[-1]])
		return fast_call_ok(s1, (size_t)(j - s1), NULL, 0, end);
	for (s0 = k - 1; s0 > start && wordc[s0[-1]];)
		s0--;
	if (s0 > start && s0[-1] == '.')
		return false; /* x.INTO or 1.INTO: not the keyword the parser sees */
	return fast_call_ok(s1, (size_t)(j - s1), s0, (size_t)(k - s0), end);
}

#if defined(__SSE2__)
/*
 * SELECT bodies up to SEL_VEC_MAX bytes: two bit masks of the statement
 * (identifier bytes, event bytes) are built 16 bytes a step; then words are
 * visited by their start bits and events one by one, without the branch a
 * byte loop mispredicts at the end of every word. Decides as
 * fast_body_scalar, except that any "." gives up (that needs more state).
 */
struct selmasks {
	union {
		uint64_t q[SEL_VEC_MAX / 64];
		uint16_t h[SEL_VEC_MAX / 16];
	} w, e;
	size_t nq;
};

static inline __m128i word_bytes(__m128i v)
{
	__m128i l = _mm_or_si128(v, _mm_set1_epi8(0x20));
	__m128i t = _mm_and_si128(_mm_cmpgt_epi8(l, _mm_set1_epi8('a' - 1)),
	                          _mm_cmplt_epi8(l, _mm_set1_epi8('z' + 1)));

	t = _mm_or_si128(t, _mm_and_si128(_mm_cmpgt_epi8(v, _mm_set1_epi8('0' - 1)),
	                                  _mm_cmplt_epi8(v, _mm_set1_epi8('9' + 1))));
	t = _mm_or_si128(t, _mm_cmpeq_epi8(v, _mm_set1_epi8('_')));
	t = _mm_or_si128(t, _mm_cmpeq_epi8(v, _mm_set1_epi8('$')));
	return _mm_or_si128(t, _mm_cmplt_epi8(v, _mm_setzero_si128()));
}

/* quotes, ( - / . and the give-up bytes @ ; # NUL */
static inline __m128i event_bytes(__m128i v)
{
	__m128i t = _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('\'')),
	                         _mm_cmpeq_epi8(v, _mm_set1_epi8('"')));

	t = _mm_or_si128(t, _mm_cmpeq_epi8(v, _mm_set1_epi8('`')));
	t = _mm_or_si128(t, _mm_cmpeq_epi8(v, _mm_set1_epi8('(')));
	t = _mm_or_si128(t, _mm_cmpeq_epi8(v, _mm_set1_epi8('-')));
	t = _mm_or_si128(t, _mm_cmpeq_epi8(v, _mm_set1_epi8('/')));
	t = _mm_or_si128(t, _mm_cmpeq_epi8(v, _mm_set1_epi8('.')));
	t = _mm_or_si128(t, _mm_cmpeq_epi8(v, _mm_set1_epi8('@')));
	t = _mm_or_si128(t, _mm_cmpeq_epi8(v, _mm_set1_epi8(';')));
	t = _mm_or_si128(t, _mm_cmpeq_epi8(v, _mm_set1_epi8('#')));
	return _mm_or_si128(t, _mm_cmpeq_epi8(v, _mm_setzero_si128()));
}

/* s[0..len), 16 <= len <= SEL_VEC_MAX. The last block is loaded ending at
 * s + len (overlapping the one before) and shifted: no read past the end. */
static void sel_masks(const uint8_t *s, size_t len, struct selmasks *m)
{
	size_t nb = len / 16, rem = len % 16;

	m->nq = (len + 63) / 64;
	m->w.q[m->nq - 1] = m->e.q[m->nq - 1] = 0;
	for (size_t b = 0; b < nb; b++) {
		__m128i v = _mm_loadu_si128((const __m128i *)(s + 16 * b));

		m->w.h[b] = (uint16_t)_mm_movemask_epi8(word_bytes(v));
		m->e.h[b] = (uint16_t)_mm_movemask_epi8(event_bytes(v));
	}
	if (rem) {
		__m128i v = _mm_loadu_si128((const __m128i *)(s + len - 16));

		m->w.h[nb] = (uint16_t)((unsigned)_mm_movemask_epi8(word_bytes(v)) >> (16 - rem));
		m->e.h[nb] = (uint16_t)((unsigned)_mm_movemask_epi8(event_bytes(v)) >> (16 - rem));
	}
}

/* First set bit of a[] at or after from, or limit. */
static inline size_t sel_next(const uint64_t *a, size_t nq, size_t from, size_t limit)
{
	size_t k = from >> 6;
	uint64_t x;

	if (k >= nq)
		return limit;
	x = a[k] & (~0ull << (from & 63));
	while (!x) {
		if (++k >= nq)
			return limit;
		x = a[k];
	}
	k = (k << 6) + (size_t)__builtin_ctzll(x);
	return k < limit ? k : limit;
}

/* Checks the words starting in [from, to): could one be sensitive? */
static inline bool sel_words_ok(const uint8_t *s, const struct selmasks *m, size_t from, size_t to)
{
	for (size_t k = from >> 6; k < m->nq && (k << 6) < to; k++) {
		uint64_t w = m->w.q[k];
		uint64_t starts = w & ~((w << 1) | (k ? m->w.q[k - 1] >> 63 : 0));

		if ((k << 6) < from)
			starts &= ~0ull << (from & 63);
		while (starts) {
			size_t c = (k << 6) + (size_t)__builtin_ctzll(starts), n;
			uint64_t rest;

			if (c >= to)
				return true;
			starts &= starts - 1;
			/* length: the run of word bits from c (at most 7 matter) */
			rest = ~w >> (c & 63);
			n = rest ? (size_t)__builtin_ctzll(rest) : 64 - (c & 63);
			if ((c & 63) + n == 64 && k + 1 < m->nq)
				n += (size_t)__builtin_ctzll(~m->w.q[k + 1] | (1ull << 63));
			if (fast_sensitive(s + c, n))
				return false;
		}
	}
	return true;
}

static bool fast_body_select_vec(const uint8_t *s, size_t len, size_t pos)
{
	struct selmasks m;
	const uint8_t *end = s + len;

	sel_masks(s, len, &m);
	for (;;) {
		size_t e = sel_next(m.e.q, m.nq, pos, len);

		if (!sel_words_ok(s, &m, pos, e))
			return false;
		if (e >= len)
			return true;
		switch (fclass[s[e]]) {
		case F_QUOTE: {
			struct lx lx = {.end = end};

			pos = (size_t)(skip_quoted(&lx, s + e + 1, s[e]) - s);
			if (lx.flags)
				return false;
			continue;
		}
		case F_LP:
			if (!dml_paren_ok(s, s + e, end))
				return false;
			break;
		case F_DASH:
			if (e + 1 < len && s[e + 1] == '-')
				return false;
			break;
		case F_SLASH:
			if (e + 1 < len && s[e + 1] == '*')
				return false;
			break;
		default: /* . @ ; # NUL */
			return false;
		}
		pos = e + 1;
	}
}
#endif

/* INSERT/UPDATE/DELETE/REPLACE: the token is write already, only flags are
 * at stake, and those need no words except the one before "(". */
static bool fast_body_dml(const uint8_t *start, const uint8_t *p, const uint8_t *end)
{
	for (;;) {
		p = next_event(p, end);
		if (p >= end)
			return true;
		switch (fclass[*p]) {
		case F_QUOTE: {
			struct lx lx = {.end = end};

			p = skip_quoted(&lx, p + 1, *p);
			if (lx.flags)
				return false;
			continue;
		}
		case F_LP:
			if (!dml_paren_ok(start, p, end))
				return false;
			break;
		case F_DASH:
			if (p + 1 < end && p[1] == '-')
				return false;
			break;
		case F_SLASH:
			if (p + 1 < end && p[1] == '*')
				return false;
			break;
		default:
			return false;
		}
		p++;
	}
}

/* The fast path's body scan, one byte at a time (statements too long for
 * the masks, or no SSE2). p is after the first word. */
static bool fast_body_scalar(const uint8_t *w1, size_t l1, const uint8_t *p, const uint8_t *end,
                             bool query)
{
	const uint8_t *w0 = NULL;
	size_t l0 = 0;
	bool dotted = false;
	int last = L_WORD;

	while (p < end) {
		switch (fclass[*p]) {
		case F_SPACE:
			p++;
			continue;
		case F_WORD: {
			const uint8_t *s = p;

			while (p < end && wordc[*p])
				p++;
			if (query && fast_sensitive(s, (size_t)(p - s)))
				return false;
			if (dotted)
				return false; /* x.y: a qualified name, maybe db.fn( */
			w0 = last == L_WORD ? w1 : NULL;
			l0 = l1;
			w1 = s;
			l1 = (size_t)(p - s);
			last = L_WORD;
			continue;
		}
		case F_QUOTE: {
			struct lx lx = {.end = end};

			p = skip_quoted(&lx, p + 1, *p);
			if (lx.flags)
				return false;
			last = L_QUOTED;
			dotted = false;
			continue;
		}
		case F_LP:
			if (last == L_QUOTED)
				return false; /* `fn`( */
			if (last == L_WORD && cclass[*w1] != C_DIGIT &&
			    !fast_call_ok(w1, l1, w0, l0, end))
				return false;
			break;
		case F_DOT:
			if (last == L_WORD || last == L_QUOTED)
				dotted = true;
			last = L_OTHER;
			p++;
			continue;
		case F_DASH:
			if (p + 1 < end && p[1] == '-')
				return false;
			break;
		case F_SLASH:
			if (p + 1 < end && p[1] == '*')
				return false;
			break;
		case F_BAIL:
			return false;
		}
		last = L_OTHER;
		dotted = false;
		p++;
	}
	return true;
}
