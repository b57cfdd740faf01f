/*
 * `coldstart plan`: runs a target with the planning bootstrap while it
 * answers sample requests, and writes the start-up plan it records
 * (docs/plan.md); with --verify, replays the requests with and without the
 * plan and refuses a plan that changes a response, naming the module to
 * keep eager.
 */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "args.h"
#include "builtin.h"
#include "plan_target.h"
#include "util.h"

extern char **environ;

#define PLAN_FORMAT "coldstart-plan"
#define PLAN_VERSION 1
#define DEFAULT_OUTPUT "coldstart-plan.json"
#define DEFAULT_TIMEOUT_US ((int64_t)120 * 1000000)

struct plan_opts {
	const char *fn;
	const char *handler;
	const char *output;
	const char *python;
	const char *ready;
	struct strvec request_files;
	struct strvec eager;
	struct strvec eager_from;
	bool verify;
	int64_t timeout_us;
	struct strvec command;
};

static int check_eager(const struct opt *opt, const char *v, struct buf *err)
{
	const char *p;

	for (p = v; *p; p++)
		if (!(*p == '.' || *p == '_' || (*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'z') ||
		      (*p >= 'A' && *p <= 'Z'))) {
			buf_addf(err, "--%s '%s': expected a module name", opt->long_name, v);
			return -1;
		}
	if (!*v) {
		buf_addf(err, "--%s needs a module name", opt->long_name);
		return -1;
	}
	strvec_push(opt->value, v);
	return 0;
}

static const struct usage plan_usage = {
	.command = "plan",
	.synopsis = "usage: coldstart plan [options] --fn FUNC [HANDLER] [--request FILE]...\n"
		    "       coldstart plan [options] [--ready SPEC] [--request FILE]... -- COMMAND\n"
		    "              [ARG]...\n\n"
		    "Runs the target while it answers the sample requests and writes a start-up\n"
		    "plan: the modules it imported before the last response, where each was found,\n"
		    "which ones the requests used, and which must stay eager.  Apply it with\n"
		    "coldstart-fdk --plan FILE, python -m coldstart.run --plan FILE, or\n"
		    "COLDSTART_PLAN=FILE (docs/plan.md).\n\n",
	.footer = "With --ready http://..., each --request is POSTed to the URL (none: one GET);\n"
		  "with exit, the response is the command's stdout and exit status.\n"
		  "Exit status: 0 plan written, 1 verification refused the plan or it could not be\n"
		  "made, 2 usage, 4 the target could not be started (or is older than Python 3.8),\n"
		  "5 it failed, 8 it timed out, 9 it never became ready.\n",
};

/*
 * The parts of a plan the command reads back.  plan_load returns -1 for a
 * file that is not a plan, -2 when the bootstrap wrote why the interpreter
 * cannot be planned.
 */
struct plan_doc {
	json_t *root;
	json_t *modules;
};

static const char *mod_str(json_t *m, const char *key)
{
	json_t *v = json_object_get(m, key);

	return json_is_string(v) ? json_string_value(v) : "";
}

static int plan_load(const char *path, struct plan_doc *d, struct buf *err)
{
	json_error_t jerr;
	json_t *fmt, *ver;

	d->root = json_load_file(path, 0, &jerr);
	if (!d->root) {
		buf_addf(err, "cannot read the plan '%s': %s (line %d)", path, jerr.text, jerr.line);
		return -1;
	}
	fmt = json_object_get(d->root, "format");
	/* The bootstrap's answer when the interpreter cannot be planned. */
	if (json_is_string(fmt) && !strcmp(json_string_value(fmt), "coldstart-plan-error")) {
		buf_addf(err, "%s", mod_str(d->root, "error"));
		json_decref(d->root);
		d->root = NULL;
		return -2;
	}
	ver = json_object_get(d->root, "version");
	d->modules = json_object_get(d->root, "modules");
	if (!json_is_string(fmt) || strcmp(json_string_value(fmt), PLAN_FORMAT) || !json_is_integer(ver) ||
	    json_integer_value(ver) != PLAN_VERSION || !json_is_array(d->modules)) {
		buf_addf(err, "'%s' is not a coldstart plan of version %d", path, PLAN_VERSION);
		json_decref(d->root);
		d->root = NULL;
		return -1;
	}
	return 0;
}

static int64_t mod_int(json_t *m, const char *key)
{
	json_t *v = json_object_get(m, key);

	return json_is_integer(v) ? (int64_t)json_integer_value(v) : 0;
}

static int by_self_desc(const void *a, const void *b)
{
	int64_t x = mod_int(*(json_t *const *)a, "self_us"), y = mod_int(*(json_t *const *)b, "self_us");

	return x < y ? 1 : x > y ? -1 : 0;
}

static void print_summary(const char *path, const struct plan_doc *d)
{
	size_t i, n = json_array_size(d->modules), nd = 0;
	size_t count[3] = { 0, 0, 0 };
	int64_t us[3] = { 0, 0, 0 };
	static const char *const actions[] = { "load", "eager", "defer" };
	json_t **deferred = xcalloc(n ? n : 1, sizeof(*deferred));
	struct buf b = BUF_INIT;
	json_int_t lazy;

	for (i = 0; i < n; i++) {
		json_t *m = json_array_get(d->modules, i);
		size_t a;

		for (a = 0; a < 3; a++)
			if (!strcmp(mod_str(m, "action"), actions[a])) {
				count[a]++;
				us[a] += mod_int(m, "self_us");
			}
		if (!strcmp(mod_str(m, "action"), "defer"))
			deferred[nd++] = m;
	}
	qsort(deferred, nd, sizeof(*deferred), by_self_desc);
	printf("coldstart plan: wrote %s: %zu modules imported before the last response\n", path, n);
	buf_add_duration(&b, us[0]);
	printf("  %5zu used by the requests (load)      %s of import self time\n", count[0], b.buf);
	buf_reset(&b);
	buf_add_duration(&b, us[1]);
	printf("  %5zu kept eager                      %s\n", count[1], b.buf);
	buf_reset(&b);
	buf_add_duration(&b, us[2]);
	printf("  %5zu deferred to their first use     %s\n", count[2], b.buf);
	for (i = 0; i < nd && i < 8; i++) {
		buf_reset(&b);
		buf_add_duration(&b, mod_int(deferred[i], "self_us"));
		printf("        %-36s %s\n", mod_str(deferred[i], "name"), b.buf);
	}
	lazy = json_integer_value(json_object_get(json_object_get(d->root, "summary"), "lazy_from"));
	if (lazy > 0)
		printf("  %5lld names from-imported by modules that run, bound at their first use\n",
		       (long long)lazy);
	printf("  (times are measured under the recorder, which slows imports down)\n");
	buf_release(&b);
	free(deferred);
}

/*
 * Writes a copy of the plan where the first k deferred modules load
 * eagerly and the first nf modules of froms (all of them: nf == SIZE_MAX)
 * bind their from-imports eagerly.
 */
static int write_variant(const struct plan_doc *d, const char *const *names, size_t k,
			 const char *const *froms, size_t nf, const char *path, struct buf *err)
{
	json_t *copy = json_deep_copy(d->root);
	json_t *mods = json_object_get(copy, "modules");
	json_t *index = json_object_get(copy, "index");
	json_t *from = json_object_get(copy, "from");
	size_t i, j;
	int ret = 0;

	if (json_is_object(from)) {
		if (nf == SIZE_MAX)
			json_object_clear(from);
		for (j = 0; nf != SIZE_MAX && j < nf; j++)
			json_object_del(from, froms[j]);
	}
	for (i = 0; i < json_array_size(mods); i++) {
		json_t *m = json_array_get(mods, i);

		for (j = 0; j < k; j++)
			if (!strcmp(mod_str(m, "name"), names[j])) {
				json_object_set_new(m, "action", json_string("eager"));
				break;
			}
	}
	/* The applier's compact rows: [name, kind, path, size, mtime_ns, action, ...]. */
	for (i = 0; i < json_array_size(index); i++) {
		json_t *row = json_array_get(index, i);
		const char *name = json_string_value(json_array_get(row, 0));

		for (j = 0; name && j < k; j++)
			if (!strcmp(name, names[j])) {
				json_array_set_new(row, 5, json_string("eager"));
				break;
			}
	}
	if (json_dump_file(copy, path, JSON_COMPACT) < 0) {
		buf_addf(err, "cannot write '%s': %s", path, strerror(errno));
		ret = -1;
	}
	json_decref(copy);
	return ret;
}

/*
 * Moves the recorded plan (tmp) to output with its code archive: the
 * archive the recorder wrote to code_tmp becomes code_out, and the plan's
 * "code" says so.  A plan without an archive is renamed as it is.
 */
static int finish_plan(json_t *root, const char *tmp, const char *output, const char *code_tmp,
		       const char *code_out, struct buf *err)
{
	json_t *code = json_object_get(root, "code");

	if (json_is_object(code) && !access(code_tmp, F_OK)) {
		if (rename(code_tmp, code_out) < 0) {
			buf_addf(err, "cannot write '%s': %s", code_out, strerror(errno));
			return -1;
		}
		json_object_set_new(code, "path", json_string(code_out));
		if (json_dump_file(root, tmp, JSON_COMPACT) < 0) {
			buf_addf(err, "cannot write '%s': %s", tmp, strerror(errno));
			return -1;
		}
	}
	if (rename(tmp, output) < 0) {
		buf_addf(err, "cannot write '%s': %s", output, strerror(errno));
		return -1;
	}
	return 0;
}

struct plan_run {
	struct plan_target t;
	struct strvec argv;
	struct strvec env_plain; /* the target's own environment */
	struct strvec env_record;
	struct strvec env_apply;
	struct buf *bodies;
	size_t nr_bodies;
	char host[256];
	char path[1024];
};

static int exit_for(enum plan_status st)
{
	switch (st) {
	case PLAN_RUN_OK:
		return EXIT_OK;
	case PLAN_RUN_NO_EXEC:
		return EXIT_NO_PYTHON;
	case PLAN_RUN_EXITED:
		return EXIT_TARGET_FAILED;
	case PLAN_RUN_NOT_READY:
		return EXIT_NOT_READY;
	case PLAN_RUN_TIMEOUT:
		return EXIT_TARGET_TIMEOUT;
	case PLAN_RUN_INTERRUPTED:
		return 128 + plan_target_interrupted();
	case PLAN_RUN_FAILED:
		break;
	}
	return EXIT_FAIL;
}

static void report_failure(const char *what, enum plan_status st, const struct plan_outcome *o,
			   const struct buf *err)
{
	error("%s: %s", what, err->buf);
	if (st != PLAN_RUN_INTERRUPTED && o->stderr_tail.len) {
		fprintf(stderr, "-- the target's last stderr output:\n%s%s", o->stderr_tail.buf,
			o->stderr_tail.buf[o->stderr_tail.len - 1] == '\n' ? "" : "\n");
	}
}

/*
 * The status a caller of the target sees in a normalised response: the
 * HTTP status, or an Fn function's Fn-Http-Status; 0 for a run-to-exit
 * target's output.
 */
static int response_status(const struct buf *resp)
{
	const char *hdr_end = memmem(resp->buf, resp->len, "\r\n\r\n", 4);
	const char *fs;
	int status = 0;

	if (!hdr_end || sscanf(resp->buf, "HTTP/1.%*d %d", &status) != 1)
		return 0;
	fs = strcasestr(resp->buf, "\r\nfn-http-status:");
	if (status == 200 && fs && fs < hdr_end)
		status = atoi(fs + 17);
	return status;
}

/* Runs the target once with env; fills o.  Returns a plan_status. */
static enum plan_status run_once(struct plan_run *r, const struct strvec *env, const char *record,
				 struct plan_outcome *o, struct buf *err)
{
	r->t.env = env->v;
	r->t.record_path = record;
	plan_outcome_init(o);
	return plan_target_run(&r->t, o, err);
}

static bool same_responses(const struct plan_outcome *a, const struct plan_outcome *b, size_t *which)
{
	size_t i;

	for (i = 0; i < a->nr_responses && i < b->nr_responses; i++)
		if (a->responses[i].len != b->responses[i].len ||
		    memcmp(a->responses[i].buf, b->responses[i].buf, a->responses[i].len)) {
			*which = i;
			return false;
		}
	*which = i;
	return a->nr_responses == b->nr_responses;
}

/* Runs with plan file path applied; 1 same responses as base, 0 differ, -1 failed. */
static int try_plan(struct plan_run *r, const char *path, const struct plan_outcome *base, size_t *which,
		    struct buf *err, enum plan_status *st)
{
	struct plan_outcome o;
	int ret;

	strvec_setenv(&r->env_apply, "COLDSTART_PLAN", path);
	*st = run_once(r, &r->env_apply, NULL, &o, err);
	if (*st == PLAN_RUN_INTERRUPTED) {
		plan_outcome_release(&o);
		return -1;
	}
	/* A run that fails with the plan differs from one that answered without it. */
	ret = *st == PLAN_RUN_OK && same_responses(base, &o, which);
	if (*st != PLAN_RUN_OK)
		*which = o.nr_responses;
	plan_outcome_release(&o);
	buf_reset(err);
	return ret;
}

static void show_diff(const struct plan_outcome *a, const char *path, size_t which, const struct plan_run *r)
{
	fprintf(stderr, "coldstart plan: with the plan, response %zu of %zu differs from the one without it\n",
		which + 1, a->nr_responses);
	(void)path;
	(void)r;
}

/*
 * Verifies the plan in tmp against runs without it.  Returns EXIT_OK when
 * every response is the same, EXIT_FAIL (with the module to keep eager
 * named) when not, or the exit status of a run that failed.
 */
static int verify(struct plan_run *r, const char *tmp, const char *output)
{
	struct plan_outcome base, again;
	struct plan_doc d = { NULL, NULL };
	struct buf err = BUF_INIT, variant = BUF_INIT;
	const char **names = NULL, **froms = NULL;
	json_t *from;
	size_t nr = 0, nf = 0, i, which = 0, lo, hi;
	enum plan_status st;
	int ret = EXIT_FAIL, ok;

	plan_outcome_init(&again);
	st = run_once(r, &r->env_plain, NULL, &base, &err);
	if (st != PLAN_RUN_OK) {
		report_failure("verify: the run without the plan failed", st, &base, &err);
		ret = exit_for(st);
		goto out;
	}
	ok = try_plan(r, tmp, &base, &which, &err, &st);
	if (ok < 0) {
		ret = exit_for(st);
		goto out;
	}
	if (ok) {
		printf("coldstart plan: verified: %zu response%s identical with and without the plan\n",
		       base.nr_responses, base.nr_responses == 1 ? "" : "s");
		ret = EXIT_OK;
		goto out;
	}
	show_diff(&base, tmp, which, r);
	/* A target that answers differently every time cannot be verified. */
	st = run_once(r, &r->env_plain, NULL, &again, &err);
	if (st == PLAN_RUN_OK && !same_responses(&base, &again, &which)) {
		error("verify: response %zu differs between two runs without the plan: the target's answers are "
		      "not reproducible, so the plan cannot be verified; plan was not written",
		      which + 1);
		goto out;
	}
	if (plan_load(tmp, &d, &err) < 0) {
		error("%s", err.buf);
		goto out;
	}
	for (i = 0; i < json_array_size(d.modules); i++) {
		json_t *m = json_array_get(d.modules, i);

		if (!strcmp(mod_str(m, "action"), "defer")) {
			names = xrealloc(names, st_mult(nr + 1, sizeof(*names)));
			names[nr++] = mod_str(m, "name");
		}
	}
	buf_addf(&variant, "%s.bisect", tmp);
	/*
	 * Find the shortest prefix of the deferred modules (in import order)
	 * that, kept eager, gives the responses back: its last module is one
	 * whose deferral changes them.  ok(nr) (nothing deferred) must hold.
	 */
	/*
	 * First the lazy from-imports: when binding them all eagerly gives the
	 * responses back, find the module whose from-imports do it, as below.
	 */
	from = json_object_get(d.root, "from");
	for (i = 0; json_is_object(from) && i < json_array_size(d.modules); i++) {
		const char *name = mod_str(json_array_get(d.modules, i), "name");

		if (json_object_get(from, name)) {
			froms = xrealloc(froms, st_mult(nf + 1, sizeof(*froms)));
			froms[nf++] = name;
		}
	}
	if (nf) {
		if (write_variant(&d, names, 0, froms, SIZE_MAX, variant.buf, &err) < 0)
			goto fail;
		ok = try_plan(r, variant.buf, &base, &which, &err, &st);
		if (ok < 0) {
			ret = exit_for(st);
			goto out;
		}
		if (ok) {
			lo = 0;
			hi = nf;
			while (hi - lo > 1) {
				size_t mid = lo + (hi - lo) / 2;

				if (write_variant(&d, names, 0, froms, mid, variant.buf, &err) < 0)
					goto fail;
				ok = try_plan(r, variant.buf, &base, &which, &err, &st);
				if (ok < 0) {
					ret = exit_for(st);
					goto out;
				}
				if (ok)
					hi = mid;
				else
					lo = mid;
			}
			error("verify: binding the from-imports of '%s' lazily changes the responses; keep them "
			      "eager: add --eager-from %s (plan was not written to %s)",
			      froms[hi - 1], froms[hi - 1], output);
			goto out;
		}
	}
	/* Then the deferred modules, with every from-import bound eagerly. */
	if (write_variant(&d, names, nr, froms, SIZE_MAX, variant.buf, &err) < 0)
		goto fail;
	ok = try_plan(r, variant.buf, &base, &which, &err, &st);
	if (ok < 0) {
		ret = exit_for(st);
		goto out;
	}
	if (!ok) {
		error("verify: the responses differ even with nothing deferred: the module index itself changes "
		      "them (a module found elsewhere than its recorded file?); plan was not written");
		goto out;
	}
	lo = 0;
	hi = nr;
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;

		if (write_variant(&d, names, mid, froms, SIZE_MAX, variant.buf, &err) < 0)
			goto fail;
		ok = try_plan(r, variant.buf, &base, &which, &err, &st);
		if (ok < 0) {
			ret = exit_for(st);
			goto out;
		}
		if (ok)
			hi = mid;
		else
			lo = mid;
	}
	error("verify: deferring '%s' changes the responses; keep it eager: add --eager %s "
	      "(plan was not written to %s)",
	      names[hi - 1], names[hi - 1], output);
	goto out;
fail:
	error("%s", err.buf);
out:
	if (variant.len)
		unlink(variant.buf);
	plan_outcome_release(&base);
	plan_outcome_release(&again);
	free(names);
	free(froms);
	if (d.root)
		json_decref(d.root);
	buf_release(&err);
	buf_release(&variant);
	return ret;
}

static int read_bodies(struct plan_run *r, const struct strvec *files)
{
	size_t i;

	r->bodies = xcalloc(files->nr ? files->nr : 1, sizeof(*r->bodies));
	for (i = 0; i < files->nr; i++) {
		int fd = open(files->v[i], O_RDONLY | O_CLOEXEC);
		char chunk[65536];
		ssize_t n;

		buf_init(&r->bodies[i], 0);
		r->nr_bodies = i + 1;
		if (fd < 0)
			return error("cannot read request '%s': %s", files->v[i], strerror(errno));
		while ((n = read(fd, chunk, sizeof(chunk))) > 0)
			buf_add(&r->bodies[i], chunk, n);
		close(fd);
		if (n < 0)
			return error("cannot read request '%s': %s", files->v[i], strerror(errno));
	}
	return 0;
}

static int parse_ready(struct plan_run *r, const char *spec)
{
	const char *hp, *slash, *colon;
	char *end;
	long port;

	if (!strcmp(spec, "fn")) {
		r->t.probe = PLAN_PROBE_FN;
		return 0;
	}
	if (!strcmp(spec, "exit")) {
		r->t.probe = PLAN_PROBE_EXIT;
		return 0;
	}
	if (!starts_with(spec, "http://"))
		return error("--ready '%s': expected fn, exit or http://127.0.0.1:PORT/PATH", spec);
	hp = spec + 7;
	slash = strchr(hp, '/');
	if (!slash)
		slash = hp + strlen(hp);
	colon = memchr(hp, ':', slash - hp);
	if (!colon || colon == hp || (size_t)(colon - hp) >= sizeof(r->host))
		return error("--ready '%s': expected http://HOST:PORT/PATH", spec);
	memcpy(r->host, hp, colon - hp);
	r->host[colon - hp] = '\0';
	port = strtol(colon + 1, &end, 10);
	if (end != slash || port <= 0 || port > 65535)
		return error("--ready '%s': bad port", spec);
	if (strcmp(r->host, "127.0.0.1") && strcmp(r->host, "localhost") && strcmp(r->host, "::1") &&
	    strcmp(r->host, "[::1]"))
		return error("--ready '%s': plan talks only to a server on this machine (127.0.0.1, localhost)",
			     spec);
	snprintf(r->path, sizeof(r->path), "%s", *slash ? slash : "/");
	r->t.probe = PLAN_PROBE_HTTP;
	r->t.host = r->host;
	r->t.port = (int)port;
	r->t.path = r->path;
	return 0;
}

/* PYTHONPATH with dir in front of the target's own. */
static void set_pythonpath(struct strvec *env, const char *dir)
{
	const char *old = strvec_getenv(env, "PYTHONPATH");
	struct buf b = BUF_INIT;

	buf_adds(&b, dir);
	if (old && *old)
		buf_addf(&b, ":%s", old);
	strvec_setenv(env, "PYTHONPATH", b.buf);
	buf_release(&b);
}

int cmd_plan(int argc, char **argv)
{
	struct plan_opts o;
	struct plan_run r;
	struct plan_doc d = { NULL, NULL };
	struct plan_outcome rec;
	struct buf err = BUF_INIT, boot = BUF_INIT, tmp = BUF_INIT, eager = BUF_INIT, fdk = BUF_INIT;
	struct buf code_out = BUF_INIT, code_tmp = BUF_INIT;
	char cwd[4096];
	const char *datadir = coldstart_datadir();
	enum plan_status st;
	int i = 1, rc, ret = EXIT_USAGE;
	size_t k;
	const struct opt options[] = {
		OPT_STRING("fn", 0, &o.fn, "FUNC", "an Fn function file (or module) served by coldstart-fdk; HANDLER may follow"),
		OPT_STRINGS("request", 0, &o.request_files, "FILE", "a sample request body (repeat for more; sent in order)"),
		OPT_STRING("ready", 0, &o.ready, "SPEC", "fn, http://127.0.0.1:PORT/PATH or exit (default: fn with --fn, else exit)"),
		OPT_STRING("output", 'o', &o.output, "FILE", "where to write the plan (default " DEFAULT_OUTPUT ")"),
		OPT_CALLBACK("eager", 0, &o.eager, check_eager, "MODULE", "keep MODULE (and its submodules) eager (repeat for more)"),
		OPT_CALLBACK("eager-from", 0, &o.eager_from, check_eager, "MODULE",
			     "bind the from-imports of MODULE (and its submodules) eagerly (repeat for more)"),
		OPT_BOOL("verify", 0, &o.verify, "replay the requests with and without the plan; refuse it if a response differs"),
		OPT_STRING("python", 0, &o.python, "PATH", "interpreter for --fn (default: $COLDSTART_PYTHON or python3)"),
		OPT_DURATION("timeout", 0, &o.timeout_us, "TIME", "limit for each run of the target (default 120s)"),
		OPT_HELP("help", 'h', NULL, "this text"),
		OPT_END(),
	};

	memset(&o, 0, sizeof(o));
	memset(&r, 0, sizeof(r));
	strvec_init(&o.request_files);
	strvec_init(&o.eager);
	strvec_init(&o.eager_from);
	strvec_init(&o.command);
	strvec_init(&r.argv);
	strvec_init(&r.env_plain);
	strvec_init(&r.env_record);
	strvec_init(&r.env_apply);
	plan_outcome_init(&rec);
	o.output = DEFAULT_OUTPUT;
	o.timeout_us = DEFAULT_TIMEOUT_US;
	for (;;) {
		rc = args_parse(options, argc, argv, &i, NULL, &err);
		if (rc) {
			ret = usage_stop(&plan_usage, options, rc, err.buf);
			goto out;
		}
		if (i >= argc)
			break;
		if (!strcmp(argv[i], "--")) {
			i++;
			break;
		}
		if (o.fn && !o.handler) {
			o.handler = argv[i++];
			continue;
		}
		break;
	}
	for (; i < argc; i++)
		strvec_push(&o.command, argv[i]);
	if (o.fn && o.command.nr) {
		ret = usage_error(&plan_usage,
				  "--fn runs coldstart-fdk itself; give either --fn FUNC [HANDLER] or a command after --");
		goto out;
	}
	if (!o.fn && !o.command.nr) {
		ret = usage_error(&plan_usage, "nothing to plan: give --fn FUNC [HANDLER] or a command after --");
		goto out;
	}
	if (o.timeout_us <= 0) {
		ret = usage_error(&plan_usage, "--timeout must be more than zero");
		goto out;
	}
	if (!datadir) {
		error("cannot find coldstart's python directory (set COLDSTART_DATADIR)");
		ret = EXIT_FAIL;
		goto out;
	}
	if (parse_ready(&r, o.ready ? o.ready : o.fn ? "fn" : "exit") < 0)
		goto out;
	if (r.t.probe == PLAN_PROBE_FN && !o.request_files.nr) {
		ret = usage_error(&plan_usage, "an Fn function needs at least one --request FILE to plan for");
		goto out;
	}
	if (r.t.probe == PLAN_PROBE_EXIT && o.request_files.nr) {
		ret = usage_error(&plan_usage, "--request needs a server (--fn, or --ready fn or http://...): a "
					       "command that runs to exit takes no requests");
		goto out;
	}
	if (read_bodies(&r, &o.request_files) < 0) {
		ret = EXIT_FAIL;
		goto out;
	}
	if (o.fn) {
		const char *py = o.python ? o.python : getenv("COLDSTART_PYTHON") ? getenv("COLDSTART_PYTHON")
										 : "python3";

		if (access(o.fn, F_OK) < 0 && (strchr(o.fn, '/') || ends_with(o.fn, ".py"))) {
			error("no such function file '%s'", o.fn);
			goto out;
		}
		strvec_push(&r.argv, py);
		buf_addf(&fdk, "%s/coldstart-fdk", datadir);
		if (!access(fdk.buf, R_OK))
			strvec_push(&r.argv, fdk.buf);
		else
			strvec_pushv(&r.argv, (const char *const[]){ "-m", "coldstart.fdk", NULL });
		strvec_push(&r.argv, o.fn);
		strvec_push(&r.argv, o.handler ? o.handler : "handler");
	} else {
		strvec_pushv(&r.argv, o.command.v);
	}
	r.t.argv = r.argv.v;
	r.t.requests = r.bodies;
	r.t.nr_requests = r.nr_bodies;
	r.t.timeout_us = o.timeout_us;

	strvec_pushv(&r.env_plain, (const char *const *)environ);
	strvec_pushv(&r.env_record, r.env_plain.v);
	strvec_pushv(&r.env_apply, r.env_plain.v);
	strvec_setenv(&r.env_plain, "COLDSTART_PLAN", "");
	strvec_setenv(&r.env_apply, "COLDSTART_PLAN_RECORD", "");
	buf_addf(&boot, "%s/coldstart/_boot/plan", datadir);
	set_pythonpath(&r.env_record, boot.buf);
	set_pythonpath(&r.env_apply, boot.buf);
	buf_addf(&tmp, "%s.tmp-%d", o.output, (int)getpid());
	/* The code archive's path is written into the plan: make it absolute. */
	if (o.output[0] != '/' && getcwd(cwd, sizeof(cwd)))
		buf_addf(&code_out, "%s/", cwd);
	buf_addf(&code_out, "%s.code", o.output);
	buf_addf(&code_tmp, "%s.tmp-%d", code_out.buf, (int)getpid());
	strvec_setenv(&r.env_record, "COLDSTART_PLAN_RECORD", tmp.buf);
	strvec_setenv(&r.env_record, "COLDSTART_PLAN_CODE_OUT", code_tmp.buf);
	strvec_setenv(&r.env_record, "COLDSTART_PLAN", "");
	for (k = 0; k < o.eager.nr; k++)
		buf_addf(&eager, "%s%s", k ? "," : "", o.eager.v[k]);
	strvec_setenv(&r.env_record, "COLDSTART_PLAN_EAGER", eager.buf);
	buf_reset(&eager);
	for (k = 0; k < o.eager_from.nr; k++)
		buf_addf(&eager, "%s%s", k ? "," : "", o.eager_from.v[k]);
	strvec_setenv(&r.env_record, "COLDSTART_PLAN_EAGER_FROM", eager.buf);

	plan_target_setup_signals();
	unlink(tmp.buf);
	unlink(code_tmp.buf);
	st = run_once(&r, &r.env_record, tmp.buf, &rec, &err);
	if (st != PLAN_RUN_OK) {
		report_failure("planning run", st, &rec, &err);
		ret = exit_for(st);
		goto out;
	}
	for (k = 0; k < rec.nr_responses; k++) {
		int status = response_status(&rec.responses[k]);

		if (status >= 500) {
			error("request %zu was answered %d: the target failed, and a plan made from a failing "
			      "request would defer what the working path needs; fix the request or the target",
			      k + 1, status);
			if (rec.stderr_tail.len)
				fprintf(stderr, "-- the target's last stderr output:\n%s\n", rec.stderr_tail.buf);
			ret = EXIT_TARGET_FAILED;
			goto out;
		}
	}
	rc = plan_load(tmp.buf, &d, &err);
	if (rc < 0) {
		error("%s", err.buf);
		ret = rc == -2 ? EXIT_NO_PYTHON : EXIT_FAIL;
		goto out;
	}
	if (o.verify) {
		ret = verify(&r, tmp.buf, o.output);
		if (ret != EXIT_OK)
			goto out;
	}
	if (finish_plan(d.root, tmp.buf, o.output, code_tmp.buf, code_out.buf, &err) < 0) {
		error("%s", err.buf);
		ret = EXIT_FAIL;
		goto out;
	}
	print_summary(o.output, &d);
	ret = EXIT_OK;
out:
	if (tmp.len)
		unlink(tmp.buf);
	if (code_tmp.len)
		unlink(code_tmp.buf);
	if (d.root)
		json_decref(d.root);
	plan_outcome_release(&rec);
	for (k = 0; k < r.nr_bodies; k++)
		buf_release(&r.bodies[k]);
	free(r.bodies);
	strvec_clear(&o.request_files);
	strvec_clear(&o.eager);
	strvec_clear(&o.eager_from);
	strvec_clear(&o.command);
	strvec_clear(&r.argv);
	strvec_clear(&r.env_plain);
	strvec_clear(&r.env_record);
	strvec_clear(&r.env_apply);
	buf_release(&err);
	buf_release(&boot);
	buf_release(&tmp);
	buf_release(&eager);
	buf_release(&fdk);
	buf_release(&code_out);
	buf_release(&code_tmp);
	return ret;
}
