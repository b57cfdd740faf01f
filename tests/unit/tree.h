/*
 * Building import trees by hand in unit tests: one helper for every test
 * that needs a process's nodes.  Header-only, so each test binary stays one
 * source file.
 */
#ifndef COLDSTART_TEST_TREE_H
#define COLDSTART_TEST_TREE_H

#include <string.h>

#include "model/profile.h"

/*
 * Adds node name under parent (-1: a root) of pr with its self and
 * cumulative times, linked as the last child; returns its index.
 */
static inline int32_t add(struct proc *pr, int32_t parent, const char *name, int64_t self, int64_t cum)
{
	int32_t i = proc_add_node(pr, name, strlen(name), parent < 0 ? 0 : pr->nodes[parent].depth + 1, self, cum);

	if (parent < 0)
		proc_link_root(pr, i);
	else
		proc_link_child(pr, parent, i);
	return i;
}

#endif
