/*
 * dlist.h - the two operations on an intrusive doubly linked list kept as a
 * head and a tail pointer, with the links in the element (the proxy's
 * waiting and not-yet-logged-in sessions). Macros, because the links are
 * named per list (an element may be on several); each list's own code keeps
 * its counters and flags. The node argument is evaluated more than once:
 * pass a plain variable.
 */
#ifndef MYSTEER_DLIST_H
#define MYSTEER_DLIST_H

#include <stddef.h>

/* Appends node to the list (head, tail); prev and next name its links. */
#define DLIST_PUSH_BACK(head, tail, node, prev, next)                                              \
	do {                                                                                       \
		(node)->next = NULL;                                                               \
		(node)->prev = (tail);                                                             \
		if (tail)                                                                          \
			(tail)->next = (node);                                                     \
		else                                                                               \
			(head) = (node);                                                           \
		(tail) = (node);                                                                   \
	} while (0)

/* Takes node off the list (head, tail) it is on and clears its links. */
#define DLIST_UNLINK(head, tail, node, prev, next)                                                 \
	do {                                                                                       \
		if ((node)->prev)                                                                  \
			(node)->prev->next = (node)->next;                                         \
		else                                                                               \
			(head) = (node)->next;                                                     \
		if ((node)->next)                                                                  \
			(node)->next->prev = (node)->prev;                                         \
		else                                                                               \
			(tail) = (node)->prev;                                                     \
		(node)->prev = (node)->next = NULL;                                                \
	} while (0)

#endif
