/*
 * Built-in list of the standard library's top-level module names.
 */
#ifndef COLDSTART_STDLIB_NAMES_H
#define COLDSTART_STDLIB_NAMES_H

#include <stdbool.h>
#include <stddef.h>

/* True when the first len bytes of name are a standard-library top-level name. */
bool stdlib_name_known(const char *name, size_t len);

#endif
