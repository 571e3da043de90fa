/*
 * testenv.c - see testenv.h.
 */
#include "common/testenv.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"

uint64_t test_env_uint(const char *name, uint64_t dflt, uint64_t max)
{
	const char *v = getenv(name);
	char *end;
	unsigned long long n;

	if (!v || !*v)
		return dflt;
	errno = 0;
	n = strtoull(v, &end, 10);
	if (errno || *end || n == 0 || n > max) {
		log_warn("ignoring %s=%s (want 1..%llu)", name, v, (unsigned long long)max);
		return dflt;
	}
	return n;
}

bool test_feature_off(const char *feature)
{
	const char *v = getenv("MYSTEER_TEST_NO_FEATURE");
	size_t n = strlen(feature);

	for (const char *p = v; p && *p;) {
		if (!strncmp(p, feature, n) && (p[n] == ',' || p[n] == 0))
			return true;
		p = strchr(p, ',');
		if (p)
			p++;
	}
	return false;
}
