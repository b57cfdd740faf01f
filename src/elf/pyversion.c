/*
 * Python versions named in an interpreter's bytes: PY_VERSION among the
 * strings of its read-only data, and major.minor in a soname.
 */
#include "elf/pyversion.h"

#include <stdlib.h>
#include <string.h>

#include "util.h"

/* Whether s is exactly a version: "3.11.2", "3.13.0rc1", Debian's "3.11.2+". */
static bool is_version_at(const char *s, size_t len)
{
	size_t i = 0, dots = 0;

	if (len < 5 || (s[0] != '2' && s[0] != '3') || s[1] != '.')
		return false;
	for (i = 2; i < len; i++) {
		if (s[i] == '.') {
			if (s[i - 1] == '.' || ++dots > 1)
				return false;
		} else if (s[i] < '0' || s[i] > '9') {
			break;
		}
	}
	if (dots != 1 || s[i - 1] == '.')
		return false;
	/* A release suffix: a1, b2, rc1, and Debian's "+". */
	while (i < len && s[i] >= 'a' && s[i] <= 'z')
		i++;
	while (i < len && s[i] >= '0' && s[i] <= '9')
		i++;
	if (i < len && s[i] == '+')
		i++;
	return i == len;
}

bool pyversion_major_minor(const char *s, size_t len, char *out, size_t outlen)
{
	const char *p;

	if ((p = memmem(s, len, "libpython", 9))) {
		const char *q = p + 9;
		size_t n = 0;

		while (q + n < s + len && ((q[n] >= '0' && q[n] <= '9') || q[n] == '.'))
			n++;
		while (n && q[n - 1] == '.')
			n--;
		if (n >= 3 && n < outlen && q[1] == '.') {
			memcpy(out, q, n);
			out[n] = '\0';
			return true;
		}
	}
	if ((p = memmem(s, len, "cpython-", 8))) {
		const char *q = p + 8;
		size_t n = 0;

		while (q + n < s + len && q[n] >= '0' && q[n] <= '9')
			n++;
		if (n >= 2 && n <= 3 && n + 1 < outlen) {
			out[0] = q[0];
			out[1] = '.';
			memcpy(out + 2, q + 1, n - 1);
			out[n + 1] = '\0';
			return true;
		}
	}
	return false;
}

char *pyversion_find(const char *data, size_t size, const char *soname)
{
	struct strvec whole = STRVEC_INIT, tails = STRVEC_INIT;
	char want[16] = "";
	char *found = NULL;
	size_t i = 0, wantlen;

	if (soname)
		pyversion_major_minor(soname, strlen(soname), want, sizeof(want));
	while (i < size) {
		const char *s = data + i;
		const char *nul = memchr(s, '\0', size - i);
		size_t len = nul ? (size_t)(nul - s) : size - i;
		size_t j;

		if (!want[0])
			pyversion_major_minor(s, len, want, sizeof(want));
		if (is_version_at(s, len)) {
			if (whole.nr < 64) {
				char *v = xstrndup(s, len);

				strvec_push(&whole, v);
				free(v);
			}
		} else if (len > 6 && tails.nr < 64) {
			for (j = len - 5; j > 0 && j + 12 > len; j--)
				if ((s[j - 1] == '-' || s[j - 1] == '/') && is_version_at(s + j, len - j)) {
					char *v = xstrndup(s + j, len - j);

					strvec_push(&tails, v);
					free(v);
					break;
				}
		}
		i += len + 1;
	}
	wantlen = strlen(want);
	for (i = 0; !found && i < whole.nr + tails.nr; i++) {
		const char *v = i < whole.nr ? whole.v[i] : tails.v[i - whole.nr];

		if (wantlen ? !strncmp(v, want, wantlen) && v[wantlen] == '.' : whole.nr + tails.nr == 1)
			found = xstrdup(v);
	}
	if (!found && wantlen)
		found = xstrdup(want);
	strvec_clear(&whole);
	strvec_clear(&tails);
	return found;
}