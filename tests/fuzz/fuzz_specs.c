// corpus: tests/fixtures/specs
/*
 * libFuzzer target for the option specs a user types: --ready SPEC with
 * --ready-status LIST (input "r:SPEC\nSTATUSES"), compare --limits SET
 * ("l:SET"), --budget NAME=DUR ("b:SPEC") and one limit option's value
 * ("o:OPTION\nVALUE").  Each parser returns 0 with nothing in err or -1
 * with a message; what it accepted holds its invariants (a port in range,
 * statuses in 100-599, a non-negative budget, limits that pass their check).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/budget.h"
#include "sys/ready.h"
#include "model/runlimits.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_result(int rc, const struct buf *err)
{
	if (rc != 0 && rc != -1)
		abort();
	if ((rc == 0) != (err->len == 0))
		abort(); /* a failure says why; a success says nothing */
	if (strlen(err->buf) != err->len)
		abort();
}

static void fuzz_ready(char *spec)
{
	struct ready_spec rs;
	struct buf err = BUF_INIT;
	char *statuses = strchr(spec, '\n');
	int rc, s;

	if (statuses)
		*statuses++ = '\0';
	ready_spec_init(&rs);
	rc = ready_spec_parse(&rs, spec, statuses, &err);
	check_result(rc, &err);
	if (!rc) {
		if ((rs.kind == READY_TCP || rs.kind == READY_HTTP) && (rs.port < 1 || rs.port > 65535))
			abort();
		if (rs.kind == READY_UNIX && (!rs.path || !*rs.path))
			abort();
		for (s = 0; s < 1000; s++)
			if (ready_spec_accepts(&rs, s) && rs.kind == READY_HTTP && (s < 100 || s > 599))
				abort();
	}
	ready_spec_release(&rs);
	buf_release(&err);
}

static void fuzz_limits(const char *set)
{
	struct limits lim;
	struct buf err = BUF_INIT;
	int rc;

	memset(&lim, 0, sizeof(lim));
	rc = limits_apply_set(&lim, set, &err);
	check_result(rc, &err);
	if (!rc) {
		struct buf again = BUF_INIT;

		if (limits_check(&lim, &again) < 0 || lim.cpus < 0 || limits_cpu_quota_us(&lim) < 0)
			abort();
		buf_release(&again);
	}
	limits_release(&lim);
	buf_release(&err);
}

static void fuzz_budget(const char *spec)
{
	struct budget b;
	struct buf err = BUF_INIT;
	int rc;

	budget_init(&b);
	rc = budget_add(&b, spec, &err);
	check_result(rc, &err);
	if (!rc && (b.nr != 1 || b.items[0].limit_us < 0 || !b.items[0].name || !*b.items[0].name))
		abort();
	budget_release(&b);
	buf_release(&err);
}

static void fuzz_option(char *s)
{
	struct limits lim;
	struct buf err = BUF_INIT;
	char *value = strchr(s, '\n');
	int rc;

	if (!value)
		return;
	*value++ = '\0';
	/* limits_set's callers pass only these (an unknown name is a BUG()). */
	if (strcmp(s, "cpus") && strcmp(s, "memory") && strcmp(s, "swap") && strcmp(s, "pids") && strcmp(s, "cpuset") &&
	    strcmp(s, "preset"))
		return;
	memset(&lim, 0, sizeof(lim));
	rc = limits_set(&lim, s, value, &err);
	check_result(rc, &err);
	limits_release(&lim);
	buf_release(&err);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s;

	if (size < 2 || data[1] != ':' || memchr(data, '\0', size))
		return 0;
	s = xstrndup((const char *)data + 2, size - 2);
	switch (data[0]) {
	case 'r': fuzz_ready(s); break;
	case 'l': fuzz_limits(s); break;
	case 'b': fuzz_budget(s); break;
	case 'o': fuzz_option(s); break;
	}
	free(s);
	return 0;
}
