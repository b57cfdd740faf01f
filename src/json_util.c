/*
 * jansson helpers shared by the JSON readers (json_util.h).
 */
#include "json_util.h"

#include "util.h"

char *json_util_strdup(json_t *obj, const char *key)
{
	const char *s = json_string_value(json_object_get(obj, key));

	return s ? xstrdup(s) : NULL;
}
