/*
 * The --cold side of a measuring session: eviction last before each exec,
 * learning after each run, and measured runs that were not cold made again
 * (measure_cold.h).
 */
#include "session/measure_cold.h"

/*
 * The runner calls this last before the target's exec: after the tracer's
 * build check ran the interpreter, so the eviction and its mincore check
 * are what the target starts with.  A failed eviction does not end the run;
 * the run is not cold and says so.
 */
static int evict_now(void *data, struct buf *err)
{
	struct measure_cold_run *x = data;

	cold_evict(x->cs, &x->r->cold, &x->err);
	return 0;
}

void measure_cold_arm(struct measure_cold_run *x, struct cold_set *cs, struct runner_opts *ro, struct profile *p,
		      struct run *r)
{
	x->cs = cs;
	x->ro = ro;
	x->p = p;
	x->r = r;
	buf_init(&x->err, 0);
	ro->before_exec = evict_now;
	ro->before_exec_data = x;
	ro->trace_reads = true;
}

void measure_cold_after_run(struct measure_cold_run *x, bool failed)
{
	struct profile *p = x->p;
	struct run *r = x->r;
	struct buf first = BUF_INIT, text = BUF_INIT;
	size_t n = 0;

	x->ro->before_exec = NULL;
	x->ro->before_exec_data = NULL;
	x->ro->trace_reads = false;
	if (!failed)
		n = cold_learn_run(x->cs, r, &first);
	if (!r->cold.asked)
		goto out;
	if (x->err.len) {
		profile_add_warning(p, 0, "--cold: %s", x->err.buf);
		warning("--cold: %s", x->err.buf);
	}
	if (!r->cold.partial)
		r->cold.unevicted = (int64_t)n;
	if (!x->err.len && !cold_figures_took(&r->cold) && !r->cold.partial) {
		cold_describe(&r->cold, &text);
		if (n)
			buf_addf(&text, " (the first: '%s')", first.buf);
		profile_add_warning(p, 0, "run %zu was not cold: %s", (size_t)(r - p->runs) + 1, text.buf);
	}
out:
	buf_release(&first);
	buf_release(&text);
	buf_release(&x->err);
}

bool measure_cold_redo(struct profile *p, int n, int max, int *reruns)
{
	struct run *r = &p->runs[p->nr_runs - 1];

	if (!r->cold.asked || !r->cold.unevicted || *reruns >= max)
		return false;
	(*reruns)++;
	r->warmup = true;
	profile_add_warning(p, 0,
			    "measured run %d read %lld file%s that %s not evicted before it: it counts as a warm-up "
			    "(run %zu), and run %d is made again with %s evicted",
			    n, (long long)r->cold.unevicted, r->cold.unevicted == 1 ? "" : "s",
			    r->cold.unevicted == 1 ? "was" : "were", p->nr_runs, n,
			    r->cold.unevicted == 1 ? "it" : "them");
	return true;
}
