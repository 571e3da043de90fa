/*
 * privdrop.h - [mysteerd] user: once set up, mysteerd runs every thread as
 * that user, keeping only the capabilities it uses from then on (CAP_BPF,
 * CAP_NET_ADMIN, and CAP_SYS_PTRACE and CAP_DAC_READ_SEARCH to find and copy
 * a local server's listener when sk_lookup hands connections to local
 * servers) and with PR_SET_NO_NEW_PRIVS.
 */
#ifndef MYSTEER_PRIVDROP_H
#define MYSTEER_PRIVDROP_H

#include <stddef.h>
#include <stdint.h>

#include "config/config.h"

/* The capabilities kept under cfg (a mask of CAP_* bits). */
uint64_t privdrop_caps(const struct config *cfg);
/* Drops to cfg->user (nothing when it is empty). 0, or -1 with err. */
int privdrop(const struct config *cfg, char *err, size_t errlen);

#endif
