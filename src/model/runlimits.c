/*
 * Resource limits as options give them: parsing, presets, checks and the
 * description reports print (see runlimits.h).  No system calls.
 */
#include "model/runlimits.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static bool valid_cpuset(const char *s)
{
	const char *p = s;

	if (!*s)
		return false;
	for (;;) {
		long a, b;
		char *end;

		if (!isdigit((unsigned char)*p))
			return false;
		errno = 0;
		a = strtol(p, &end, 10);
		if (errno || a > 8191)
			return false;
		p = end;
		if (*p == '-') {
			if (!isdigit((unsigned char)p[1]))
				return false;
			b = strtol(p + 1, &end, 10);
			if (errno || b > 8191 || b < a)
				return false;
			p = end;
		}
		if (!*p)
			return true;
		if (*p != ',')
			return false;
		p++;
	}
}

/* A plain decimal: digits with at most one point, no sign or exponent. */
static bool plain_decimal(const char *s)
{
	bool digit = false, point = false;

	for (; *s; s++) {
		if (isdigit((unsigned char)*s))
			digit = true;
		else if (*s == '.' && !point)
			point = true;
		else
			return false;
	}
	return digit;
}

static void set_str(char **field, const char *s)
{
	free(*field);
	*field = s ? xstrdup(s) : NULL;
}

void limits_release(struct limits *lim)
{
	free(lim->cpuset);
	free(lim->preset);
	free(lim->backend);
	lim->cpuset = lim->preset = lim->backend = NULL;
}

int limits_set_cpus(struct limits *lim, const char *s, struct buf *err)
{
	double v;

	if (!s || !plain_decimal(s)) {
		buf_addf(err, "invalid --cpus '%s': expected a number of CPUs such as 0.1 or 2", s ? s : "");
		return -1;
	}
	v = strtod(s, NULL);
	if (!isfinite(v) || llround(v * LIMITS_CPU_PERIOD_US) < LIMITS_CPU_MIN_QUOTA_US) {
		buf_addf(err, "invalid --cpus '%s': the smallest CPU limit is 0.01", s);
		return -1;
	}
	if (v > 1024) {
		buf_addf(err, "invalid --cpus '%s': at most 1024 CPUs", s);
		return -1;
	}
	lim->cpus = v;
	return 0;
}

int limits_set_memory(struct limits *lim, const char *s, struct buf *err)
{
	int64_t v;

	if (!s || parse_size(s, &v)) {
		buf_addf(err, "invalid --memory '%s': expected a size such as 128m or 1g", s ? s : "");
		return -1;
	}
	if (v < LIMITS_MEMORY_MIN) {
		buf_addf(err, "invalid --memory '%s': the smallest memory limit is 4m", s);
		return -1;
	}
	lim->memory = v;
	return 0;
}

int limits_set_swap(struct limits *lim, const char *s, struct buf *err)
{
	int64_t v;

	if (s && (!strcmp(s, "unlimited") || !strcmp(s, "max") || !strcmp(s, "-1"))) {
		lim->swap = -1;
		return 0;
	}
	if (!s || parse_size(s, &v)) {
		buf_addf(err, "invalid --swap '%s': expected a size such as 0, 64m or 1g, or 'unlimited'", s ? s : "");
		return -1;
	}
	lim->swap = v;
	return 0;
}

int limits_set_pids(struct limits *lim, const char *s, struct buf *err)
{
	const char *p;
	long v;

	for (p = s ? s : ""; isdigit((unsigned char)*p); p++)
		;
	if (!s || !*s || *p || strlen(s) > 9 || (v = strtol(s, NULL, 10)) < 1 || v > LIMITS_PIDS_MAX) {
		buf_addf(err, "invalid --pids '%s': expected a number of processes from 1 to %ld", s ? s : "",
			 LIMITS_PIDS_MAX);
		return -1;
	}
	lim->pids = v;
	return 0;
}

int limits_set_cpuset(struct limits *lim, const char *s, struct buf *err)
{
	if (!s || !valid_cpuset(s)) {
		buf_addf(err, "invalid --cpuset '%s': expected a CPU list such as 0 or 0-1,3", s ? s : "");
		return -1;
	}
	set_str(&lim->cpuset, s);
	return 0;
}

int limits_set_preset(struct limits *lim, const char *s, struct buf *err)
{
	const char *p;
	long mb;

	if (s && !strcmp(s, "fn")) {
		/* The Fn team's docker run: --cpus 0.1 --memory 128m. */
		lim->cpus = 0.1;
		lim->memory = 128LL * 1024 * 1024;
		set_str(&lim->preset, s);
		return 0;
	}
	if (s && starts_with(s, "lambda:")) {
		p = s + strlen("lambda:");
		if (*p && strlen(p) <= 5 && strspn(p, "0123456789") == strlen(p)) {
			mb = strtol(p, NULL, 10);
			if (mb >= 128 && mb <= 10240) {
				lim->cpus = (double)mb / LIMITS_LAMBDA_MB_PER_CPU;
				lim->memory = (int64_t)mb * 1024 * 1024;
				set_str(&lim->preset, s);
				return 0;
			}
		}
		buf_addf(err, "invalid --preset '%s': Lambda memory is a whole number of MB from 128 to 10240", s);
		return -1;
	}
	buf_addf(err, "invalid --preset '%s': expected 'fn' or 'lambda:MB' (e.g. lambda:512)", s ? s : "");
	return -1;
}

int limits_check(const struct limits *lim, struct buf *err)
{
	if (lim->swap != 0 && lim->memory <= 0) {
		buf_adds(err, "--swap needs --memory: swap is only limited beyond a memory limit");
		return -1;
	}
	return 0;
}

bool limits_any(const struct limits *lim)
{
	return lim->cpus > 0 || lim->memory > 0 || lim->pids > 0 || lim->cpuset || lim->swap != 0;
}

int limits_set(struct limits *lim, const char *option, const char *value, struct buf *err)
{
	static const struct {
		const char *name;
		int (*set)(struct limits *lim, const char *s, struct buf *err);
	} setters[] = {
		{ "cpus", limits_set_cpus }, { "memory", limits_set_memory }, { "swap", limits_set_swap },
		{ "pids", limits_set_pids }, { "cpuset", limits_set_cpuset }, { "preset", limits_set_preset },
	};
	size_t i;

	for (i = 0; i < ARRAY_SIZE(setters); i++)
		if (!strcmp(option, setters[i].name))
			return setters[i].set(lim, value, err);
	BUG("no limit is set by --%s", option);
}

void limits_set_backend(struct limits *lim, const char *backend)
{
	set_str(&lim->backend, backend);
}

int64_t limits_cpu_quota_us(const struct limits *lim)
{
	return lim->cpus > 0 ? (int64_t)llround(lim->cpus * LIMITS_CPU_PERIOD_US) : 0;
}

void limits_describe(const struct limits *lim, struct buf *out)
{
	size_t start = out->len;

	if (lim->cpus > 0)
		buf_addf(out, "%.3g CPU", lim->cpus);
	if (lim->memory > 0) {
		buf_adds(out, out->len > start ? ", " : "");
		buf_add_bytes(out, lim->memory);
		buf_adds(out, " memory");
		if (lim->swap < 0) {
			buf_adds(out, ", unlimited swap");
		} else if (lim->swap > 0) {
			buf_adds(out, ", ");
			buf_add_bytes(out, lim->swap);
			buf_adds(out, " swap");
		}
	}
	if (lim->pids > 0)
		buf_addf(out, "%s%ld pids", out->len > start ? ", " : "", lim->pids);
	if (lim->cpuset)
		buf_addf(out, "%scpus %s", out->len > start ? ", " : "", lim->cpuset);
	if (out->len == start)
		buf_adds(out, "no limits");
	if (lim->preset)
		buf_addf(out, " (preset %s)", lim->preset);
	if (lim->backend)
		buf_addf(out, " via %s", lim->backend);
}

int limits_apply_set(struct limits *lim, const char *set, struct buf *err)
{
	char *copy, *item, *next;
	int ret = 0;

	if (!strcmp(set, "none")) {
		limits_release(lim);
		memset(lim, 0, sizeof(*lim));
		return 0;
	}
	copy = xstrdup(set);
	for (item = copy; item && !ret; item = next) {
		char *eq;

		next = strchr(item, ',');
		if (next)
			*next++ = '\0';
		eq = strchr(item, '=');
		if (!eq || eq == item) {
			buf_addf(err,
				 "--limits '%s': '%s' is not NAME=VALUE (cpus, memory, swap, pids, cpuset, preset)",
				 set, item);
			ret = -1;
			break;
		}
		*eq = '\0';
		if (strcmp(item, "cpus") && strcmp(item, "memory") && strcmp(item, "swap") && strcmp(item, "pids") &&
		    strcmp(item, "cpuset") && strcmp(item, "preset")) {
			buf_addf(err, "--limits '%s': no limit '%s' (cpus, memory, swap, pids, cpuset, preset)", set,
				 item);
			ret = -1;
		} else if (limits_set(lim, item, eq + 1, err) < 0) {
			ret = -1;
		}
	}
	free(copy);
	if (!ret && limits_check(lim, err) < 0)
		ret = -1;
	return ret;
}
