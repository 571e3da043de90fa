/*
 * testenv.h - test-only overrides of internal constants (wait bounds,
 * periods, caps) read from the environment, so integration tests can cross a
 * 10 s bound or a cap of 256 in a few checks. Not configuration: production
 * never sets them, and a bad value is logged and ignored.
 */
#ifndef MYSTEER_TESTENV_H
#define MYSTEER_TESTENV_H

#include <stdbool.h>
#include <stdint.h>

/* The positive number in the environment variable name, at most max; dflt
 * when it is unset, and (with a warning) when it is not such a number. */
uint64_t test_env_uint(const char *name, uint64_t dflt, uint64_t max);

/* Whether MYSTEER_TEST_NO_FEATURE (a comma-separated list) names feature:
 * the daemon then acts as on a kernel without it, so that the fallbacks run
 * in the tests. */
bool test_feature_off(const char *feature);

#endif
