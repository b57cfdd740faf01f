/*
 * Findings from the timeline (--timeline): start-up work that is not an
 * import, with the fix where one is known (docs/findings.md): botocore
 * clients made at start-up, Django's admin autodiscovery, regular
 * expressions compiled at module scope, and any other function that holds a
 * large share of the time to ready.
 */
#include "analysis/timeline_rules.h"

#include <stdlib.h>
#include <string.h>

#include "model/timeline.h"

#define LIST_MAX 5

/* The target's process and its timeline, as the rules read them. */
struct tl_ctx {
	const struct run *r;
	const struct proc *pr;
	const struct timeline *tl;
	bool by_cpu; /* under a CPU limit: CPU time is what the code costs */
	int64_t ready_us; /* the time to the timeline's end, finalisation left out */
	int64_t *imp, *impc; /* per node: time in the outermost imports below it */
};

static bool ctx_init(struct tl_ctx *c, const struct profile *p)
{
	const struct run *r = findings_main_run(p);
	struct tl_split sp;
	size_t i;

	memset(c, 0, sizeof(*c));
	if (!r || !r->nr_procs || !r->procs[0].timeline)
		return false;
	c->r = r;
	c->pr = &r->procs[0];
	c->tl = c->pr->timeline;
	c->by_cpu = p->limits.cpus > 0 || r->cg.nr_throttled > 0;
	timeline_split(c->tl, &sp);
	c->ready_us = c->by_cpu && sp.total_cpu_us >= 0 ? sp.total_cpu_us - sp.shutdown_cpu_us
							: sp.total_us - sp.shutdown_us - sp.wait_us;
	c->imp = xcalloc(c->tl->nr_nodes + 1, sizeof(*c->imp));
	c->impc = xcalloc(c->tl->nr_nodes + 1, sizeof(*c->impc));
	for (i = c->tl->nr_nodes; i-- > 0;) {
		const struct tl_node *n = &c->tl->nodes[i];

		if (n->parent < 0)
			continue;
		c->imp[n->parent] += n->kind == TL_IMPORT ? n->cum_us - n->cum_wait_us : c->imp[i];
		c->impc[n->parent] += n->kind == TL_IMPORT ? n->cum_cpu_us : c->impc[i];
	}
	return c->ready_us > 0;
}

static void ctx_release(struct tl_ctx *c)
{
	free(c->imp);
	free(c->impc);
}

/* Adds a finding of the target's process, the one the rules read: ev, which names its pid, is the evidence. */
static void target_finding(struct profile *p, const struct tl_ctx *c, struct buf *ev, const char *id,
			   const char *severity, const char *module, int64_t cost_us, const char *title,
			   const char *fix)
{
	size_t target = 0;
	struct proc_set s = { &target, 1, 1 };

	if (c->pr->pid > 0)
		buf_addf(ev, " (pid %ld)", c->pr->pid);
	finding_add_in(p, c->r, &s, id, severity, module, cost_us, title, ev->buf, fix);
}

static int64_t cum_of(const struct tl_ctx *c, int32_t i, bool with_imports)
{
	const struct tl_node *n = &c->tl->nodes[i];

	if (c->by_cpu)
		return with_imports ? n->cum_cpu_us : n->cum_cpu_us - c->impc[i];
	/* Waiting for a CPU measures the machine, not the code. */
	return with_imports ? n->cum_us - n->cum_wait_us : n->cum_us - n->cum_wait_us - c->imp[i];
}

static bool has_ancestor_named(const struct timeline *tl, int32_t i, const char *name)
{
	for (i = tl->nodes[i].parent; i >= 0; i = tl->nodes[i].parent)
		if (!strcmp(tl_str(tl, tl->nodes[i].name), name))
			return true;
	return false;
}

/* The time in the outermost calls of function name; *calls counts them (places in the tree). */
static int64_t time_in(const struct tl_ctx *c, const char *name, bool with_imports, size_t *calls)
{
	int64_t total = 0;
	size_t i;

	if (calls)
		*calls = 0;
	for (i = 0; i < c->tl->nr_nodes; i++) {
		const struct tl_node *n = &c->tl->nodes[i];

		if (n->kind != TL_FUNC || strcmp(tl_str(c->tl, n->name), name) ||
		    has_ancestor_named(c->tl, (int32_t)i, name))
			continue;
		total += cum_of(c, (int32_t)i, with_imports);
		if (calls)
			(*calls)++;
	}
	return total;
}

static void add_share(struct buf *b, const struct tl_ctx *c, int64_t us)
{
	buf_add_duration(b, us);
	if (c->by_cpu)
		buf_adds(b, " of CPU");
	buf_addf(b, " (%.0f%% of %s)", 100.0 * (double)us / (double)c->ready_us,
		 c->tl->end == TL_END_EXIT	       ? "the run until finalisation"
		 : c->tl->end == TL_END_FIRST_RESPONSE ? "the time to the first response"
						       : "the time to ready");
}

/*
 * botocore builds a client from its service's JSON model (read, parsed,
 * turned into classes) and registers handlers for the session: work that a
 * client made on first use, or one client shared by the process, pays once
 * or not at start-up at all.
 */
static void rule_boto_client(struct profile *p)
{
	struct tl_ctx c;
	struct buf ev = BUF_INIT;
	int64_t create, model, session;
	size_t calls;

	if (!ctx_init(&c, p))
		return;
	create = time_in(&c, "botocore.session.Session.create_client", true, &calls);
	if (create < TL_RULE_MIN_US || create * 100 < c.ready_us * TL_RULE_SHARE_PCT)
		goto out;
	model = time_in(&c, "botocore.loaders.Loader.load_service_model", true, NULL);
	session = time_in(&c, "botocore.session.Session.__init__", true, NULL);
	buf_adds(&ev, "creating botocore clients took ");
	add_share(&ev, &c, create);
	buf_addf(&ev, " in %zu place%s of the start-up", calls, calls == 1 ? "" : "s");
	if (model > 0) {
		buf_adds(&ev, "; loading service models (botocore.loaders.Loader.load_service_model) ");
		buf_add_duration(&ev, model);
	}
	if (session > 0) {
		buf_adds(&ev, "; making sessions ");
		buf_add_duration(&ev, session);
	}
	target_finding(p, &c, &ev, "startup-boto-client", create * 4 >= c.ready_us ? "warning" : "info", NULL, create,
		       "boto3/botocore clients are created at start-up",
		       "create the client on first use (a function with functools.cache that returns "
		       "boto3.client(...)), and share one client (or one boto3.session.Session) across the process "
		       "instead of one per call or per module: every client loads and parses its service's JSON "
		       "model; in a serverless function, make it at module scope only if the first request needs it");
out:
	buf_release(&ev);
	ctx_release(&c);
}

/*
 * django.contrib.admin's AppConfig.ready imports every installed app's
 * admin module (autodiscover), which pulls in forms, widgets and the models'
 * admin classes, in every process that sets Django up.
 */
static void rule_django_admin(struct profile *p)
{
	struct tl_ctx c;
	struct buf ev = BUF_INIT;
	int64_t us;

	if (!ctx_init(&c, p))
		return;
	us = time_in(&c, "django.contrib.admin.autodiscover", true, NULL);
	if (us < TL_RULE_MIN_US / 2)
		goto out;
	buf_adds(&ev, "django.contrib.admin's autodiscovery (AdminConfig.ready -> autodiscover) took ");
	add_share(&ev, &c, us);
	buf_adds(&ev, ", importing every installed app's admin module inside django.setup()");
	target_finding(p, &c, &ev, "startup-django-admin", "info", "django.contrib.admin", us,
		       "Django's admin imports every app's admin module at start-up",
		       "in the settings of processes that do not serve the admin (workers, management commands, API "
		       "services), leave 'django.contrib.admin' out of INSTALLED_APPS, or list "
		       "'django.contrib.admin.apps.SimpleAdminConfig' instead and register the ModelAdmins in the "
		       "URLconf module that serves the admin, so only that process imports them");
out:
	buf_release(&ev);
	ctx_release(&c);
}

struct per_module {
	uint32_t name;
	int64_t us;
};

static int cmp_per_module(const void *a, const void *b)
{
	const struct per_module *x = a, *y = b;

	return x->us != y->us ? (x->us > y->us ? -1 : 1) : 0;
}

static bool stdlib_import(const struct proc *pr, const char *name)
{
	int32_t m = proc_find(pr, name);

	return m >= 0 && (pr->nodes[m].kind == KIND_STDLIB || pr->nodes[m].kind == KIND_STARTUP);
}

/*
 * Regular expressions compiled while a module body runs: re.compile at
 * module scope parses and compiles every pattern whether or not it is ever
 * used.  Standard library modules are left out (nothing to change there).
 */
static void rule_regex(struct profile *p)
{
	struct tl_ctx c;
	struct per_module *m = NULL;
	struct buf ev = BUF_INIT;
	size_t nr = 0, alloc = 0, i, k;
	int64_t total = 0;

	if (!ctx_init(&c, p))
		return;
	for (i = 0; i < c.tl->nr_nodes; i++) {
		const struct tl_node *n = &c.tl->nodes[i];
		int32_t a;

		if (n->kind != TL_FUNC || strcmp(tl_str(c.tl, n->name), "re._compile") ||
		    has_ancestor_named(c.tl, (int32_t)i, "re._compile"))
			continue;
		/* The module whose body compiled it: the innermost import above. */
		for (a = n->parent; a >= 0 && c.tl->nodes[a].kind == TL_FUNC; a = c.tl->nodes[a].parent)
			;
		if (a < 0 || c.tl->nodes[a].kind != TL_IMPORT || stdlib_import(c.pr, tl_str(c.tl, c.tl->nodes[a].name)))
			continue;
		for (k = 0; k < nr && m[k].name != c.tl->nodes[a].name; k++)
			;
		if (k == nr) {
			ALLOC_GROW(m, nr + 1, alloc);
			m[nr].name = c.tl->nodes[a].name;
			m[nr++].us = 0;
		}
		m[k].us += cum_of(&c, (int32_t)i, true);
		total += cum_of(&c, (int32_t)i, true);
	}
	if (total < TL_RULE_MIN_US / 2 || !nr)
		goto out;
	qsort(m, nr, sizeof(*m), cmp_per_module);
	buf_adds(&ev, "compiling regular expressions at module scope took ");
	add_share(&ev, &c, total);
	buf_addf(&ev, " in %zu module%s: ", nr, nr == 1 ? "" : "s");
	for (k = 0; k < nr && k < LIST_MAX; k++) {
		buf_addf(&ev, "%s'%s' (", k ? ", " : "", tl_str(c.tl, m[k].name));
		buf_add_duration(&ev, m[k].us);
		buf_addch(&ev, ')');
	}
	if (nr > LIST_MAX)
		buf_addf(&ev, " and %zu more", nr - LIST_MAX);
	target_finding(p, &c, &ev, "startup-regex", "info", tl_str(c.tl, m[0].name), total,
		       "regular expressions are compiled at module scope",
		       "compile a pattern where it is first used: keep the pattern string at module scope and call "
		       "re.match/re.search with it (re caches compiled patterns), or build it in a function with "
		       "functools.cache; a pattern compiled in a loop over a table is the usual culprit");
out:
	free(m);
	buf_release(&ev);
	ctx_release(&c);
}

/* The calls the rules above explain with a fix of their own. */
static const char *const explained[] = {
	"botocore.session.Session.create_client",
	"django.contrib.admin.autodiscover",
	NULL,
};

static bool is_explained(const char *name)
{
	size_t k;

	for (k = 0; explained[k]; k++)
		if (!strcmp(name, explained[k]))
			return true;
	return false;
}

/*
 * Whether the time of node i is the work of a call a rule above explains:
 * it runs inside one, or half its time or more is in one.
 */
static bool covered(const struct tl_ctx *c, int32_t i)
{
	const struct timeline *tl = c->tl;
	int64_t own = cum_of(c, i, false), in = 0;
	int32_t a;
	size_t k;

	for (a = i; a >= 0; a = tl->nodes[a].parent)
		if (is_explained(tl_str(tl, tl->nodes[a].name)))
			return true;
	for (k = (size_t)i + 1; k < tl->nr_nodes; k++) {
		if (tl->nodes[k].kind != TL_FUNC || !is_explained(tl_str(tl, tl->nodes[k].name)))
			continue;
		for (a = tl->nodes[k].parent; a >= 0 && a != i; a = tl->nodes[a].parent)
			;
		if (a == i)
			in += cum_of(c, (int32_t)k, false);
	}
	return own > 0 && in * 2 >= own;
}

/* Whether node i lies inside (or holds) one of the nodes already reported. */
static bool nested(const struct timeline *tl, int32_t i, const int32_t *reported, size_t nr)
{
	size_t k;
	int32_t a;

	for (k = 0; k < nr; k++) {
		for (a = i; a >= 0 && a != reported[k]; a = tl->nodes[a].parent)
			;
		if (a >= 0)
			return true;
		for (a = reported[k]; a >= 0 && a != i; a = tl->nodes[a].parent)
			;
		if (a >= 0)
			return true;
	}
	return false;
}

/*
 * The wall time node i spent waiting, off the CPU, after the target was
 * listening (runs[].listening_us): a server's main thread in its accept or
 * select loop while the first request is answered (Django's runserver
 * answers in a thread of its own) serves, it does no start-up work.  A
 * sample counts when the thread ran less than half its interval.  0 when
 * the run has no listening moment before its readiness.
 */
static int64_t serving_idle_us(const struct tl_ctx *c, int32_t i)
{
	const struct run *r = c->r;
	const struct timeline *tl = c->tl;
	int64_t listening_ns, idle = 0;
	size_t k;
	int32_t a;

	if (r->listening_us < 0 || r->ready_us < 0 || r->ready_ns < 0 || r->listening_us >= r->ready_us ||
	    tl->origin_ns < 0)
		return 0;
	listening_ns = r->ready_ns - (r->ready_us - r->listening_us) * 1000;
	for (k = 0; k < tl->nr_samples; k++) {
		const struct tl_sample *s = &tl->samples[k];

		if (s->cpu_us < 0 || tl->origin_ns + (s->t_us - s->wall_us) * 1000 < listening_ns ||
		    s->cpu_us * 2 >= s->wall_us)
			continue;
		for (a = s->node; a >= 0 && a != i; a = tl->nodes[a].parent)
			;
		if (a == i)
			idle += s->wall_us;
	}
	return idle;
}

/* Any other function outside imports with a large share of the time to ready; one per call chain. */
static void rule_work(struct profile *p)
{
	struct tl_ctx c;
	struct tl_func f[3 * LIST_MAX];
	int32_t reported[3];
	size_t n, i, shown = 0;

	if (!ctx_init(&c, p))
		return;
	n = timeline_top_functions(c.tl, c.by_cpu, f, ARRAY_SIZE(f));
	for (i = 0; i < n && shown < 3; i++) {
		int64_t us = c.by_cpu ? f[i].total_cpu_us : f[i].total_us;
		const char *name = tl_str(c.tl, f[i].name);
		struct buf ev = BUF_INIT, title = BUF_INIT, chain = BUF_INIT;

		if (us < TL_RULE_MIN_US || us * 100 < c.ready_us * TL_RULE_SHARE_PCT)
			break;
		if (covered(&c, f[i].node) || nested(c.tl, f[i].node, reported, shown))
			continue;
		if (!c.by_cpu) {
			us -= serving_idle_us(&c, f[i].node);
			if (us < TL_RULE_MIN_US || us * 100 < c.ready_us * TL_RULE_SHARE_PCT)
				continue;
		}
		reported[shown] = f[i].node;
		buf_addf(&ev, "'%s' ran for ", name);
		add_share(&ev, &c, us);
		buf_adds(&ev, " outside imports (");
		buf_add_duration(&ev, c.by_cpu ? f[i].self_cpu_us : f[i].self_us);
		buf_adds(&ev, " in itself)");
		timeline_chain(c.tl, c.tl->nodes[f[i].node].parent, 4, &chain);
		if (chain.len)
			buf_addf(&ev, "; called from %s", chain.buf);
		buf_addf(&title, "'%s' is a large part of the start-up outside imports", name);
		target_finding(p, &c, &ev, "startup-work", us * 4 >= c.ready_us ? "warning" : "info", NULL, us,
			       title.buf,
			       "if the first request does not need it, do it on first use (a cached function, a lazy "
			       "property) instead of at start-up; if it builds the same thing every start (parsed "
			       "configuration, schemas, routing tables), cache the result across starts or build it "
			       "once when the image is made");
		shown++;
		buf_release(&ev);
		buf_release(&title);
		buf_release(&chain);
	}
	ctx_release(&c);
}

static const struct finding_rule rules[] = {
	{ .id = "startup-boto-client", .run = rule_boto_client },
	{ .id = "startup-django-admin", .run = rule_django_admin },
	{ .id = "startup-regex", .run = rule_regex },
	{ .id = "startup-work", .run = rule_work },
};

const struct finding_rules timeline_finding_rules = { rules, ARRAY_SIZE(rules) };
