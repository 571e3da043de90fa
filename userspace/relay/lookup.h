/*
 * lookup.h - the sk_lookup service of mysteerd (lookup_service): attaches
 * bpf/steer_lookup.bpf.c to the daemon's network namespace through a pinned
 * bpf_link, and keeps the SOCKMAP slots it assigns from filled: a local
 * backend's own listener (local handoff), a relay listener for a remote
 * backend (or every backend with local_handoff = off). The routes' "no
 * target" error listeners are steer_service's (userspace/maps).
 */
#ifndef MYSTEER_LOOKUP_H
#define MYSTEER_LOOKUP_H

#include "common/service.h"
#include "mysteer_abi.h"

/* Pinned link name under bpffs_dir. */
#define LOOKUP_LINK_NAME MS_LINK_LOOKUP

extern const struct service_ops lookup_service;

#endif
