/*
 * Python versions named in an interpreter's bytes, for the ELF reader
 * (PY_VERSION in libpython's read-only data) and the interpreter facts
 * (major.minor from a soname).  Pure functions over memory.
 */
#ifndef COLDSTART_PYVERSION_H
#define COLDSTART_PYVERSION_H

#include <stdbool.h>
#include <stddef.h>

/*
 * "3.11" from "libpython3.11.so.1.0" or "cpython-311" anywhere in s[0..len),
 * NUL-terminated into out; false when none is named or it does not fit.
 */
bool pyversion_major_minor(const char *s, size_t len, char *out, size_t outlen);
/*
 * PY_VERSION ("3.11.2") among the NUL-separated strings of data (the
 * read-only data of the object that defines Py_Initialize).  The linker may
 * merge it into the tail of a longer string ("/build/Python-3.13.0"), and
 * other version-like literals exist, so the major.minor named by soname
 * (may be NULL) or elsewhere in data picks the candidate; with none named, a
 * lone candidate is taken.  Falls back to the major.minor alone.  Returns a
 * new string, or NULL when data names no version.
 */
char *pyversion_find(const char *data, size_t size, const char *soname);

#endif
