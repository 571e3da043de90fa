/*
 * dump.h - `mysteerctl maps`: what is pinned under a bpffs_dir, read
 * without the daemon. Apart from maps.h so that the CLI links the dump
 * without the daemon's service interface.
 */
#ifndef MYSTEER_MAPS_DUMP_H
#define MYSTEER_MAPS_DUMP_H

#include <stdbool.h>
#include <stdio.h>

/* Dumps the maps pinned under bpffs_dir (daemon up or down). Returns 0, or -1
 * with a one-line reason written to out. */
int maps_dump(const char *bpffs_dir, bool json, FILE *out);

#endif
