/*
 * The rules on what module code does at import (see findings_code.h).
 */
#include "analysis/findings_code.h"

#include <stdlib.h>
#include <string.h>

static const char *python_of(const struct profile *p)
{
	return p->python && *p->python ? p->python : "python3";
}

static bool node_is_tool(const struct proc *pr, int32_t i)
{
	return pr->nodes[i].kind == KIND_TOOL;
}

/*
 * What to compile for a module's file: the top-level package's directory
 * ("/site/pkg" for pkg.sub at /site/pkg/sub.py), or the file itself for a
 * top-level module.
 */
static void compile_target(const char *name, const char *file, struct buf *out)
{
	size_t cut = 0;
	const char *p;

	for (p = name; *p; p++)
		if (*p == '.')
			cut++;
	if (ends_with(file, "/__init__.py"))
		cut++;
	if (!cut) {
		buf_adds(out, file);
		return;
	}
	p = file + strlen(file);
	while (cut && p > file) {
		p--;
		if (*p == '/')
			cut--;
	}
	if (p == file) {
		buf_adds(out, file);
		return;
	}
	buf_add(out, file, (size_t)(p - file));
}

static bool in_list(const struct strvec *sv, const char *s)
{
	size_t i;

	for (i = 0; i < sv->nr; i++)
		if (!strcmp(sv->v[i], s))
			return true;
	return false;
}

/* A module compiled at import, in each process that compiled it. */
struct compiled {
	const char *name;
	int64_t ns; /* in the first process */
	struct proc_set procs;
};

static struct compiled *compiled_entry(struct compiled **v, size_t *nr, size_t *alloc, const char *name)
{
	size_t k;

	for (k = 0; k < *nr; k++)
		if (!strcmp((*v)[k].name, name))
			return &(*v)[k];
	ALLOC_GROW(*v, *nr + 1, *alloc);
	(*v)[*nr] = (struct compiled){ name, -1, PROC_SET_INIT };
	return &(*v)[(*nr)++];
}

/* The modules compiled in r's processes, each once; *targets gets what to compile, *total_ns the time. */
static struct compiled *collect_compiled(const struct run *r, size_t *nr, struct proc_set *all, struct strvec *targets,
					 int64_t *total_ns)
{
	struct compiled *v = NULL, *c;
	struct buf t = BUF_INIT;
	size_t alloc = 0, pi;
	int32_t i;

	for (pi = 0; pi < r->nr_procs; pi++) {
		const struct proc *pr = &r->procs[pi];

		/* Only the tracer sees compilation: without a trace there is nothing to find. */
		if (!pr->timing)
			continue;
		for (i = pr->first_root; i >= 0; i = proc_preorder_next(pr, i)) {
			const struct imp_timing *tm = &pr->timing[i];

			if (!(pr->nodes[i].flags & NODE_COMPILED) || node_is_tool(pr, i))
				continue;
			c = compiled_entry(&v, nr, &alloc, node_name(pr, i));
			if (!c->procs.nr)
				c->ns = tm->compile_ns;
			proc_set_add(&c->procs, pi);
			proc_set_add(all, pi);
			if (tm->compile_ns > 0)
				*total_ns = i64_add(*total_ns, tm->compile_ns);
			if (tm->file && targets->nr < 8) {
				buf_reset(&t);
				compile_target(node_name(pr, i), proc_str(pr, tm->file), &t);
				if (!in_list(targets, t.buf))
					strvec_push(targets, t.buf);
			}
		}
	}
	buf_release(&t);
	return v;
}

/*
 * compiled-at-startup: every module once, however many processes compiled
 * it (two workers importing the app), the processes named.
 */
static void rule_compiled(struct profile *p)
{
	const struct run *r = findings_main_run(p);
	struct buf ev = BUF_INIT, fix = BUF_INIT, title = BUF_INIT;
	struct strvec targets = STRVEC_INIT;
	struct proc_set all = PROC_SET_INIT;
	struct compiled *c;
	int64_t total_ns = 0;
	size_t nr = 0, k;

	if (!r)
		return;
	c = collect_compiled(r, &nr, &all, &targets, &total_ns);
	if (!nr)
		goto out;
	for (k = 0; k < nr && k < FINDINGS_LIST_MAX; k++) {
		buf_addf(&ev, "%s'%s'", k ? ", " : "", c[k].name);
		if (c[k].ns > 0 || c[k].procs.nr > 1) {
			buf_adds(&ev, " (");
			if (c[k].ns > 0)
				buf_add_duration(&ev, c[k].ns / 1000);
			if (c[k].procs.nr > 1)
				buf_addf(&ev, "%sin %zu processes", c[k].ns > 0 ? ", " : "", c[k].procs.nr);
			buf_adds(&ev, ")");
		}
	}
	if (nr > k)
		buf_addf(&ev, " and %zu more", nr - k);
	buf_addf(&ev,
		 " %s compiled from source at import (no usable .pyc: missing, stale, or not "
		 "writable); compiling took ",
		 nr == 1 ? "was" : "were");
	buf_add_duration(&ev, total_ns / 1000);
	buf_adds(&ev, all.nr > 1 ? " in all, in " : " in ");
	findings_add_procs(&ev, r, &all);
	buf_addf(&title, "%zu module%s compiled from source at start-up", nr, nr == 1 ? "" : "s");
	buf_addf(&fix, "precompile where the code is installed, e.g. in the image build: %s -m compileall -q",
		 python_of(p));
	for (k = 0; k < targets.nr; k++)
		buf_addf(&fix, " %s", targets.v[k]);
	if (!targets.nr)
		buf_adds(&fix, " <code directory>");
	buf_adds(&fix, " (as the user and interpreter that run it; do not set PYTHONDONTWRITEBYTECODE "
		       "there; compile before the directory is made read-only)");
	finding_add_in(p, r, &all, "compiled-at-startup", "warning", NULL, total_ns / 1000, title.buf, ev.buf, fix.buf);
out:
	for (k = 0; k < nr; k++)
		proc_set_release(&c[k].procs);
	free(c);
	proc_set_release(&all);
	buf_release(&ev);
	buf_release(&fix);
	buf_release(&title);
	strvec_clear(&targets);
}

enum effect { FX_NONE = -1, FX_NETWORK, FX_SUBPROCESS, FX_WRITE, FX_SLEEP, FX__COUNT };

static const struct {
	const char *what;
	const char *fix;
} effect_info[FX__COUNT] = {
	[FX_NETWORK] = { "network access", "do not connect or resolve names at import: create the client or connection "
					   "on first use (inside a function, or a cached factory), so a slow or "
					   "unreachable network cannot delay or break start-up" },
	[FX_SUBPROCESS] = { "a subprocess", "do not run commands at import: run them on first use, or compute the "
					    "value at build time and ship it as data" },
	[FX_WRITE] = { "file writes", "do not write files at import: create them on first use or at build time; a "
				      "read-only or full file system must not break start-up" },
	[FX_SLEEP] = { "a sleep", "remove the sleep from module scope; retries and waits belong in the first "
				  "call that needs the resource" },
};

/*
 * Whether a socket.bind's address (its repr: "('::1', 0)", "('::1', 0, 0,
 * 0)") asks for port 0: an ephemeral port, as urllib3's IPv6 check binds
 * at import.  Such a bind sends nothing and listens on no known port.
 */
static bool bind_port_zero(const char *detail)
{
	const char *comma = detail[0] == '(' ? strstr(detail, ", ") : NULL;
	char *end;
	long port;

	if (!comma)
		return false;
	port = strtol(comma + 2, &end, 10);
	return end != comma + 2 && port == 0 && (*end == ',' || *end == ')');
}

static enum effect effect_of(const char *name, const char *detail)
{
	static const char *const network[] = { "socket.connect", "socket.getaddrinfo", "socket.gethostbyname",
					       "socket.bind", "urllib.Request" };
	static const char *const subprocess[] = { "subprocess.Popen", "os.system", "os.exec",	"os.posix_spawn",
						  "os.spawn",	      "os.fork",   "os.forkpty" };
	size_t i;

	if (!strcmp(name, "socket.bind") && bind_port_zero(detail))
		return FX_NONE;
	for (i = 0; i < ARRAY_SIZE(network); i++)
		if (!strcmp(name, network[i]))
			return FX_NETWORK;
	for (i = 0; i < ARRAY_SIZE(subprocess); i++)
		if (!strcmp(name, subprocess[i]))
			return FX_SUBPROCESS;
	/* subprocess.DEVNULL and friends open /dev/null for writing: nothing is written. */
	if (!strcmp(name, "open") && !strcmp(detail, "w:/dev/null"))
		return FX_NONE;
	if ((!strcmp(name, "open") && starts_with(detail, "w:")) || !strcmp(name, "os.remove") ||
	    !strcmp(name, "os.rename") || !strcmp(name, "os.mkdir"))
		return FX_WRITE;
	if (!strcmp(name, "time.sleep"))
		return FX_SLEEP;
	return FX_NONE;
}

/* The events of one (module, kind of effect), in each process where the module had it. */
struct side_effect {
	const char *module;
	enum effect fx;
	size_t proc, event; /* the first process's first such event */
	struct proc_set procs;
};

/* Adds the finding for one (module, kind of effect): the first process's events, every process named. */
static void side_effect_finding(struct profile *p, const struct run *r, const struct side_effect *se)
{
	const struct proc *pr = &r->procs[se->proc];
	const struct proc_event *ev = &pr->events[se->event];
	struct buf evid = BUF_INIT, title = BUF_INIT;
	int64_t cost = UNKNOWN;
	size_t count = 0, k;

	buf_addf(&evid, "while '%s' was being imported it ran ", se->module);
	for (k = se->event; k < pr->nr_events; k++) {
		const struct proc_event *o = &pr->events[k];
		const char *onm = proc_str(pr, o->name), *odet = proc_str(pr, o->detail);

		if (o->node != ev->node || effect_of(onm, odet) != se->fx)
			continue;
		if (count < FINDINGS_LIST_MAX)
			buf_addf(&evid, "%s%s(%s)", count ? ", " : "", onm, starts_with(odet, "w:") ? odet + 2 : odet);
		count++;
		if (se->fx == FX_SLEEP) {
			double secs = strtod(odet, NULL);

			if (secs > 0)
				cost = i64_add(cost == UNKNOWN ? 0 : cost, i64_from_double(secs * 1e6));
		}
	}
	if (count > FINDINGS_LIST_MAX)
		buf_addf(&evid, " and %zu more", count - FINDINGS_LIST_MAX);
	buf_adds(&evid, "; import chain ");
	finding_add_chain(&evid, pr, ev->node);
	if (se->procs.nr > 1) {
		buf_adds(&evid, "; it did so in ");
		findings_add_procs(&evid, r, &se->procs);
	}
	buf_addf(&title, "'%s' has %s at import", se->module, effect_info[se->fx].what);
	finding_add_in(p, r, &se->procs, "import-side-effect", "warning", se->module, cost, title.buf, evid.buf,
		       effect_info[se->fx].fix);
	buf_release(&evid);
	buf_release(&title);
}

/* One finding per (module, kind of effect), naming every process where the module had it. */
static void rule_side_effects(struct profile *p)
{
	const struct run *r = findings_main_run(p);
	struct side_effect *v = NULL;
	size_t nr = 0, alloc = 0, pi, e, k;

	if (!r)
		return;
	for (pi = 0; pi < r->nr_procs; pi++) {
		const struct proc *pr = &r->procs[pi];

		for (e = 0; e < pr->nr_events; e++) {
			const struct proc_event *ev = &pr->events[e];
			enum effect fx;
			const char *nm;

			if (ev->node < 0 || node_is_tool(pr, ev->node))
				continue;
			fx = effect_of(proc_str(pr, ev->name), proc_str(pr, ev->detail));
			if (fx == FX_NONE)
				continue;
			nm = node_name(pr, ev->node);
			for (k = 0; k < nr && (v[k].fx != fx || strcmp(v[k].module, nm)); k++)
				;
			if (k == nr) {
				ALLOC_GROW(v, nr + 1, alloc);
				v[nr++] = (struct side_effect){ nm, fx, pi, e, PROC_SET_INIT };
			}
			proc_set_add(&v[k].procs, pi);
		}
	}
	for (k = 0; k < nr; k++) {
		side_effect_finding(p, r, &v[k]);
		proc_set_release(&v[k].procs);
	}
	free(v);
}

static const struct finding_rule code_rules[] = {
	{ .id = "import-side-effect", .run = rule_side_effects },
	{ .id = "compiled-at-startup", .run = rule_compiled },
};

const struct finding_rules findings_code_rules = { code_rules, ARRAY_SIZE(code_rules) };
