/*
 * Helpers for the readers that parse JSON with jansson (the ELF facts and the
 * native-extension section of a profile): one place for what each of them
 * used to carry a copy of.
 */
#ifndef COLDSTART_JSON_UTIL_H
#define COLDSTART_JSON_UTIL_H

#include <jansson.h>

/*
 * A copy of the string member key of obj (the caller frees it); NULL when
 * obj is not an object, or the member is missing or not a string.
 */
char *json_util_strdup(json_t *obj, const char *key);

#endif
