/*
 * `coldstart plan`: runs a target with the planning bootstrap while it
 * answers sample requests, and writes the start-up plan it records
 * (docs/plan.md); with --verify, replays the requests with and without the
 * plan and keeps eager every module whose deferral changes a response.
 */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <regex.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "args.h"
#include "cmd/builtin.h"
#include "sys/leftover.h"
#include "session/measure.h"
#include "plan/plan_pick.h"
#include "plan/plan_place.h"
#include "plan/plan_target.h"
#include "plan/plan_verify.h"
#include "session/show.h"
#include "ingest/trace_build.h"
#include "sys/cgroup.h"
#include "util.h"

extern char **environ;

#define DEFAULT_OUTPUT "coldstart-plan.json"
#define DEFAULT_TIMEOUT_US ((int64_t)120 * 1000000)

struct plan_opts {
	const char *fn;
	const char *lambda;
	const char *handler;
	const char *output;
	const char *python;
	const char *ready;
	struct strvec request_files;
	struct strvec eager;
	struct strvec eager_from;
	struct strvec masks;
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

static int check_mask(const struct opt *opt, const char *v, struct buf *err)
{
	regex_t re;
	char msg[256];
	int rc = regcomp(&re, v, REG_EXTENDED);

	if (rc) {
		regerror(rc, &re, msg, sizeof(msg));
		buf_addf(err, "--%s '%s': %s", opt->long_name, v, msg);
		return -1;
	}
	regfree(&re);
	strvec_push(opt->value, v);
	return 0;
}

static const struct usage plan_usage = {
	.command = "plan",
	.synopsis = "usage: coldstart plan [options] --fn FUNC [HANDLER] [--request FILE]...\n"
		    "       coldstart plan [options] --lambda HANDLER --request EVENT.json...\n"
		    "       coldstart plan [options] [--ready SPEC] [--request FILE]... -- COMMAND\n"
		    "              [ARG]...\n\n"
		    "Runs the target while it answers the sample requests and writes a start-up\n"
		    "plan: the modules it imported before the last response, where each was found,\n"
		    "which ones the requests used, and which must stay eager.  Apply it with\n"
		    "coldstart-fdk --plan FILE, coldstart-lambda --plan FILE,\n"
		    "python -m coldstart.run --plan FILE, or\n"
		    "COLDSTART_PLAN=FILE (docs/plan.md).\n\n",
	.footer = "With --ready http://..., each --request is POSTed to the URL (none: one GET);\n"
		  "with exit, the response is the command's stdout, stderr and exit status.\n"
		  "A target that forks while it answers (a pre-fork server) is planned from the\n"
		  "process whose requests used the most modules; the programs it starts\n"
		  "(subprocess, exec) are not recorded.\n"
		  "Exit status: 0 plan written, 1 verification refused the plan or it could not be\n"
		  "made, 2 usage, 4 the target could not be started (or is older than Python 3.8),\n"
		  "5 it failed, 8 it timed out, 9 it never became ready.\n",
};

static int by_self_desc(const void *a, const void *b)
{
	int64_t x = plan_mod_int(*(json_t *const *)a, "self_us"), y = plan_mod_int(*(json_t *const *)b, "self_us");

	return x < y ? 1 : x > y ? -1 : 0;
}

static void print_summary(const char *path, const struct plan_doc *d)
{
	size_t i, n = json_array_size(d->modules), nd = 0, nforced = 0;
	size_t count[3] = { 0, 0, 0 };
	int64_t us[3] = { 0, 0, 0 }, forced_us = 0;
	static const char *const actions[] = { "load", "eager", "defer" };
	json_t **deferred = xcalloc(n ? n : 1, sizeof(*deferred));
	struct buf b = BUF_INIT;
	json_int_t lazy;

	for (i = 0; i < n; i++) {
		json_t *m = json_array_get(d->modules, i);
		size_t a;

		if (json_is_true(json_object_get(m, "forced"))) {
			nforced++;
			forced_us += plan_mod_int(m, "self_us");
			continue;
		}
		for (a = 0; a < 3; a++)
			if (!strcmp(plan_mod_str(m, "action"), actions[a])) {
				count[a]++;
				us[a] += plan_mod_int(m, "self_us");
			}
		if (!strcmp(plan_mod_str(m, "action"), "defer"))
			deferred[nd++] = m;
	}
	qsort(deferred, nd, sizeof(*deferred), by_self_desc);
	printf("coldstart plan: wrote %s: %zu modules imported before the last response\n", path, n);
	buf_add_duration(&b, us[0]);
	printf("  %5zu used by the requests (load)      %s of import self time\n", count[0], b.buf);
	buf_reset(&b);
	if (nforced) {
		buf_add_duration(&b, forced_us);
		printf("  %5zu read at import by what runs     %s (load: deferred, they ran all the same)\n", nforced,
		       b.buf);
		buf_reset(&b);
	}
	buf_add_duration(&b, us[1]);
	printf("  %5zu kept eager                      %s\n", count[1], b.buf);
	buf_reset(&b);
	buf_add_duration(&b, us[2]);
	printf("  %5zu deferred to their first use     %s\n", count[2], b.buf);
	for (i = 0; i < nd && i < 8; i++) {
		buf_reset(&b);
		buf_add_duration(&b, plan_mod_int(deferred[i], "self_us"));
		printf("        %-36s %s\n", plan_mod_str(deferred[i], "name"), b.buf);
	}
	lazy = json_integer_value(json_object_get(json_object_get(d->root, "summary"), "lazy_from"));
	if (lazy > 0)
		printf("  %5lld names from-imported by modules that run, bound at their first use\n", (long long)lazy);
	printf("  (times are measured under the recorder, which slows imports down)\n");
	buf_release(&b);
	free(deferred);
}

/*
 * Opens the request files: regular files only (a FIFO or a device such as
 * /dev/zero has no size to send and may never end), sent from the file at
 * every run, never read whole.
 */
static int read_bodies(struct plan_run *r, const struct strvec *files)
{
	size_t i;

	r->bodies = xcalloc(files->nr ? files->nr : 1, sizeof(*r->bodies));
	for (i = 0; i < files->nr; i++) {
		/* O_NONBLOCK: opening a FIFO must not wait for a writer. */
		int fd = open(files->v[i], O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
		struct stat st;

		r->bodies[i].path = files->v[i];
		r->bodies[i].fd = fd;
		r->nr_bodies = i + 1;
		if (fd < 0 || fstat(fd, &st) < 0)
			return error("cannot read request '%s': %s", files->v[i], strerror(errno));
		if (!S_ISREG(st.st_mode))
			return error("request '%s' is %s, not a regular file: --request needs a file (its size is "
				     "the body's Content-Length)",
				     files->v[i],
				     S_ISFIFO(st.st_mode)   ? "a FIFO"
				     : S_ISCHR(st.st_mode)  ? "a character device"
				     : S_ISDIR(st.st_mode)  ? "a directory"
				     : S_ISSOCK(st.st_mode) ? "a socket"
							    : "a block device");
		r->bodies[i].size = (uint64_t)st.st_size;
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
		return error("--ready '%s': plan talks only to a server on this machine (127.0.0.1, localhost)", spec);
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

/* One `coldstart plan`: the options, the target, the recorded plan and its files. */
struct plan_cmd {
	struct plan_opts o;
	struct plan_run r;
	struct plan_doc d;
	struct plan_outcome rec;
	struct buf err;
	struct private_dir work; /* everything a run writes until the plan is done */
	struct plan_files *files_after; /* --verify: the working directory as the recording left it */
	struct buf tmp; /* the plan as the recorder writes it */
	struct buf code_out; /* the code archive, an absolute path */
	struct buf code_tmp; /* the code archive as the recorder writes it */
};

static void plan_cmd_init(struct plan_cmd *c)
{
	memset(c, 0, sizeof(*c));
	strvec_init(&c->o.request_files);
	strvec_init(&c->o.eager);
	strvec_init(&c->o.eager_from);
	strvec_init(&c->o.masks);
	strvec_init(&c->o.command);
	strvec_init(&c->r.argv);
	strvec_init(&c->r.env_plain);
	strvec_init(&c->r.env_record);
	strvec_init(&c->r.env_apply);
	plan_outcome_init(&c->rec);
	buf_init(&c->err, 0);
	buf_init(&c->tmp, 0);
	buf_init(&c->code_out, 0);
	buf_init(&c->code_tmp, 0);
	c->work.lock_fd = -1;
	c->o.output = DEFAULT_OUTPUT;
	c->o.timeout_us = DEFAULT_TIMEOUT_US;
}

/* Removes the run's private directory (what the recorder left) and frees everything. */
static void plan_cmd_release(struct plan_cmd *c)
{
	size_t k;

	plan_files_free(c->r.files);
	plan_files_free(c->files_after);
	private_dir_remove(&c->work);
	if (c->d.root)
		json_decref(c->d.root);
	plan_outcome_release(&c->rec);
	for (k = 0; k < c->r.nr_bodies; k++)
		if (c->r.bodies[k].fd >= 0)
			close(c->r.bodies[k].fd);
	free(c->r.bodies);
	strvec_clear(&c->o.request_files);
	strvec_clear(&c->o.eager);
	strvec_clear(&c->o.eager_from);
	strvec_clear(&c->o.masks);
	for (k = 0; k < c->r.nr_masks; k++)
		regfree(&c->r.masks[k]);
	free(c->r.masks);
	strvec_clear(&c->o.command);
	strvec_clear(&c->r.argv);
	strvec_clear(&c->r.env_plain);
	strvec_clear(&c->r.env_record);
	strvec_clear(&c->r.env_apply);
	buf_release(&c->err);
	buf_release(&c->tmp);
	buf_release(&c->code_out);
	buf_release(&c->code_tmp);
}

/* The command line into c->o.  Returns -1 to go on, else the exit status. */
static int parse_options(struct plan_cmd *c, int argc, char **argv)
{
	struct plan_opts *o = &c->o;
	int i = 1, rc;
	const struct opt options[] = {
		OPT_STRING("fn", 0, &o->fn, "FUNC",
			   "an Fn function file (or module) served by coldstart-fdk; HANDLER may follow"),
		OPT_STRING("lambda", 0, &o->lambda, "HANDLER",
			   "an AWS Lambda handler (module.function) run by coldstart-lambda, each --request an event"),
		OPT_STRINGS("request", 0, &o->request_files, "FILE",
			    "a sample request body, a regular file (repeat for more; sent in order)"),
		OPT_STRING("ready", 0, &o->ready, "SPEC",
			   "fn, http://127.0.0.1:PORT/PATH or exit (default: fn with --fn, else exit)"),
		OPT_STRING("output", 'o', &o->output, "FILE", "where to write the plan (default " DEFAULT_OUTPUT ")"),
		OPT_CALLBACK("eager", 0, &o->eager, check_eager, "MODULE",
			     "keep MODULE (and its submodules) eager (repeat for more)"),
		OPT_CALLBACK("eager-from", 0, &o->eager_from, check_eager, "MODULE",
			     "bind the from-imports of MODULE (and its submodules) eagerly (repeat for more)"),
		OPT_CALLBACK("mask", 0, &o->masks, check_mask, "REGEX",
			     "with --verify: compare responses with each match of REGEX (POSIX extended) replaced "
			     "(repeat for more)"),
		OPT_BOOL("verify", 0, &o->verify,
			 "replay the requests with and without the plan; keep eager what changes a response"),
		OPT_STRING("python", 0, &o->python, "PATH",
			   "interpreter for --fn or --lambda (default: $COLDSTART_PYTHON or python3)"),
		OPT_DURATION("timeout", 0, &o->timeout_us, "TIME", "limit for each run of the target (default 120s)"),
		OPT_HELP("help", 'h', NULL, "this text"),
		OPT_END(),
	};

	for (;;) {
		rc = args_parse(options, argc, argv, &i, NULL, &c->err);
		if (rc)
			return usage_stop(&plan_usage, options, rc, c->err.buf);
		if (i >= argc)
			break;
		if (!strcmp(argv[i], "--")) {
			i++;
			break;
		}
		if (o->fn && !o->handler) {
			o->handler = argv[i++];
			continue;
		}
		break;
	}
	for (; i < argc; i++)
		strvec_push(&o->command, argv[i]);
	if (o->fn && o->command.nr)
		return usage_error(
			&plan_usage,
			"--fn runs coldstart-fdk itself; give either --fn FUNC [HANDLER] or a command after --");
	if (o->lambda && (o->fn || o->command.nr))
		return usage_error(&plan_usage, "--lambda runs coldstart-lambda itself; give no --fn and no command");
	if (o->lambda && o->ready && strcmp(o->ready, "exit"))
		return usage_error(&plan_usage, "--lambda serves its events itself and runs to its end: no --ready");
	if (o->lambda)
		return -1;
	if (!o->fn && !o->command.nr)
		return usage_error(&plan_usage, "nothing to plan: give --fn FUNC [HANDLER] or a command after --");
	if (o->timeout_us <= 0)
		return usage_error(&plan_usage, "--timeout must be more than zero");
	if (o->masks.nr && !o->verify)
		return usage_error(&plan_usage, "--mask applies to --verify's comparison: give --verify too");
	c->r.masks = xcalloc(o->masks.nr ? o->masks.nr : 1, sizeof(*c->r.masks));
	for (; c->r.nr_masks < o->masks.nr; c->r.nr_masks++)
		regcomp(&c->r.masks[c->r.nr_masks], o->masks.v[c->r.nr_masks], REG_EXTENDED);
	return -1;
}

/*
 * coldstart-lambda serving the --request files as events from a Runtime API
 * of its own and exiting after the last: a command run to its end, whose
 * output (what it posted) --verify compares.
 */
static void lambda_argv(struct plan_cmd *c, const char *datadir, const char *py)
{
	struct buf script = BUF_INIT;
	size_t i;

	strvec_push(&c->r.argv, py);
	buf_addf(&script, "%s/coldstart-lambda", datadir);
	if (!access(script.buf, R_OK))
		strvec_push(&c->r.argv, script.buf);
	else
		strvec_pushv(&c->r.argv, (const char *const[]){ "-m", "coldstart.lambda", NULL });
	for (i = 0; i < c->o.request_files.nr; i++) {
		strvec_push(&c->r.argv, "--serve-events");
		strvec_push(&c->r.argv, c->o.request_files.v[i]);
	}
	strvec_push(&c->r.argv, "--");
	strvec_push(&c->r.argv, c->o.lambda);
	buf_release(&script);
}

/* The target's argv: coldstart-fdk serving --fn, coldstart-lambda --lambda, or the command. */
static int target_argv(struct plan_cmd *c, const char *datadir)
{
	const struct plan_opts *o = &c->o;
	struct buf fdk = BUF_INIT;
	const char *py;

	if (o->lambda) {
		py = o->python ? o->python : getenv("COLDSTART_PYTHON") ? getenv("COLDSTART_PYTHON") : "python3";
		lambda_argv(c, datadir, py);
		return 0;
	}
	if (!o->fn) {
		strvec_pushv(&c->r.argv, o->command.v);
		return 0;
	}
	py = o->python ? o->python : getenv("COLDSTART_PYTHON") ? getenv("COLDSTART_PYTHON") : "python3";
	if (access(o->fn, F_OK) < 0 && (strchr(o->fn, '/') || ends_with(o->fn, ".py")))
		return error("no such function file '%s'", o->fn);
	strvec_push(&c->r.argv, py);
	buf_addf(&fdk, "%s/coldstart-fdk", datadir);
	if (!access(fdk.buf, R_OK))
		strvec_push(&c->r.argv, fdk.buf);
	else
		strvec_pushv(&c->r.argv, (const char *const[]){ "-m", "coldstart.fdk", NULL });
	strvec_push(&c->r.argv, o->fn);
	strvec_push(&c->r.argv, o->handler ? o->handler : "handler");
	buf_release(&fdk);
	return 0;
}

/* The target, its probe and its requests.  Returns -1 to go on, else the exit status. */
static int prepare_target(struct plan_cmd *c, const char *datadir)
{
	struct plan_run *r = &c->r;

	if (!datadir) {
		error("cannot find coldstart's python directory (set COLDSTART_DATADIR)");
		return EXIT_FAIL;
	}
	/* Before any run: the recorder would only find out at the end of one, the command after its timeout. */
	if (!strcmp(c->o.output, "-") || output_path_check(c->o.output, &c->err) < 0) {
		error("%s", c->err.len ? c->err.buf : "the plan is a file: -o - (standard output) cannot take it");
		return EXIT_FAIL;
	}
	if (parse_ready(r, c->o.ready ? c->o.ready : c->o.fn ? "fn" : "exit") < 0)
		return EXIT_USAGE;
	if (r->t.probe == PLAN_PROBE_FN && !c->o.request_files.nr)
		return usage_error(&plan_usage, "an Fn function needs at least one --request FILE to plan for");
	if (c->o.lambda && !c->o.request_files.nr)
		return usage_error(&plan_usage, "a Lambda handler needs at least one --request EVENT.json to plan for");
	if (r->t.probe == PLAN_PROBE_EXIT && c->o.request_files.nr && !c->o.lambda)
		return usage_error(&plan_usage, "--request needs a server (--fn, or --ready fn or http://...): a "
						"command that runs to exit takes no requests");
	if (read_bodies(r, &c->o.request_files) < 0)
		return EXIT_FAIL;
	if (target_argv(c, datadir) < 0)
		return EXIT_USAGE;
	r->t.argv = r->argv.v;
	/* --lambda's events go to coldstart-lambda as files (read above only to check them). */
	r->t.requests = c->o.lambda ? NULL : r->bodies;
	r->t.nr_requests = c->o.lambda ? 0 : r->nr_bodies;
	r->t.timeout_us = c->o.timeout_us;
	return -1;
}

/* A comma-separated list of modules as the environment variable name. */
static void set_module_list(struct strvec *env, const char *name, const struct strvec *modules)
{
	struct buf b = BUF_INIT;
	size_t k;

	for (k = 0; k < modules->nr; k++)
		buf_addf(&b, "%s%s", k ? "," : "", modules->v[k]);
	strvec_setenv(env, name, b.buf);
	buf_release(&b);
}

/*
 * The extension that records, and in applied runs answers, compile(),
 * exec() and eval() on strings (python/coldstart/_plancode.c), built for the
 * target's interpreter into the tracer's cache (trace_build.h); the plan
 * names it.  Without it the plan is made without the string table.
 */
static void set_plancode(struct plan_run *r, const char *python, const char *datadir)
{
	struct buf note = BUF_INIT, err = BUF_INIT;
	char *so = NULL;

	if (ext_build_ensure(python, datadir, "_plancode", NULL, &so, &note, &err) == 0)
		strvec_setenv(&r->env_record, "COLDSTART_PLAN_EXT", so);
	else
		warning("plan: code compiled from strings is compiled in every run: %s", err.buf);
	if (note.len && so)
		warning("plan: %s", note.buf);
	free(so);
	buf_release(&note);
	buf_release(&err);
}

/*
 * The three environments: the target's own without any plan, recording
 * (to c->tmp, the code archive to c->code_tmp, both in the run's private
 * directory) and applying a plan.
 */
static void set_environments(struct plan_cmd *c, const char *datadir)
{
	struct plan_run *r = &c->r;
	struct buf boot = BUF_INIT, note = BUF_INIT;
	char cwd[4096], *python, *cached = NULL;

	strvec_pushv(&r->env_plain, (const char *const *)environ);
	strvec_pushv(&r->env_record, r->env_plain.v);
	strvec_pushv(&r->env_apply, r->env_plain.v);
	strvec_setenv(&r->env_plain, "COLDSTART_PLAN", "");
	strvec_setenv(&r->env_apply, "COLDSTART_PLAN_RECORD", "");
	/* The bootstrap's bytecode from the cache, as the tracer's (trace_build.h). */
	python = r->argv.nr ? measure_command_python(r->argv.v[0]) : NULL;
	if (python)
		cached = boot_cache_ensure(python, datadir, "_boot/plan", &note);
	if (note.len)
		warning("plan bootstrap: %s", note.buf);
	if (python)
		set_plancode(r, python, datadir);
	if (cached)
		buf_adds(&boot, cached);
	else
		buf_addf(&boot, "%s/coldstart/_boot/plan", datadir);
	set_pythonpath(&r->env_record, boot.buf);
	set_pythonpath(&r->env_apply, boot.buf);
	buf_reset(&boot);
	buf_addf(&boot, "%s/coldstart", datadir);
	strvec_setenv(&r->env_record, "COLDSTART_PYDIR", boot.buf);
	strvec_setenv(&r->env_apply, "COLDSTART_PYDIR", boot.buf);
	free(python);
	free(cached);
	buf_release(&note);
	/*
	 * Only this run writes in c->work (0700, its own): the records of its
	 * processes, their archives, the variants --verify tries.  The plan and
	 * its archive are moved out when done (plan_place_finish).
	 */
	buf_addf(&c->tmp, "%s/plan.json", c->work.path);
	buf_addf(&c->code_tmp, "%s/plan.code", c->work.path);
	/* The code archive's path is written into the plan: make it absolute. */
	if (c->o.output[0] != '/' && getcwd(cwd, sizeof(cwd)))
		buf_addf(&c->code_out, "%s/", cwd);
	buf_addf(&c->code_out, "%s.code", c->o.output);
	strvec_setenv(&r->env_record, "COLDSTART_PLAN_RECORD", c->tmp.buf);
	strvec_setenv(&r->env_record, "COLDSTART_PLAN_CODE_OUT", c->code_tmp.buf);
	strvec_setenv(&r->env_record, "COLDSTART_PLAN", "");
	set_module_list(&r->env_record, "COLDSTART_PLAN_EAGER", &c->o.eager);
	set_module_list(&r->env_record, "COLDSTART_PLAN_EAGER_FROM", &c->o.eager_from);
	buf_release(&boot);
}

/*
 * The planning run: the target answers the requests while the bootstrap
 * records, and the plan is read back into c->d.  Returns -1 to go on, else
 * the exit status.
 */
static int record(struct plan_cmd *c)
{
	struct buf note = BUF_INIT, perr = BUF_INIT;
	enum plan_status st;
	size_t k;
	int rc = -1;
	char cwd[4096];

	/* --verify: replays start from the working directory as the recording found it. */
	if (c->o.verify && getcwd(cwd, sizeof(cwd))) {
		c->r.files = plan_files_snapshot(cwd, c->work.path, "before", c->work.path, &perr);
		if (!c->r.files)
			warning("verify: the files under the working directory are not compared, and replays do not "
				"start from its state: %s",
				perr.buf);
		buf_reset(&perr);
	}
	st = plan_run_once(&c->r, &c->r.env_record, c->tmp.buf, &c->rec, &c->err);
	if (st == PLAN_RUN_OK && c->r.files) {
		c->files_after = plan_files_snapshot(cwd, c->work.path, "after", c->work.path, &perr);
		if (!c->files_after)
			warning("verify: the working directory cannot be put back as the recording left it: %s",
				perr.buf);
		buf_reset(&perr);
	}
	/* A target that forked while recording left a record per process. */
	if (plan_pick_record(c->tmp.buf, c->r.t.probe != PLAN_PROBE_EXIT, &note, &perr) < 0 && st == PLAN_RUN_OK) {
		error("%s", perr.buf);
		rc = EXIT_FAIL;
		goto out;
	}
	if (st != PLAN_RUN_OK) {
		buf_reset(&perr);
		plan_failure_message(&perr, "planning run", st, &c->rec, &c->err);
		error("%s", perr.buf);
		rc = plan_exit_for(st);
		goto out;
	}
	if (note.len)
		printf("coldstart plan: %s\n", note.buf);
	if (c->rec.unrecorded.len)
		warning("at the last response the target had started Python processes (not forked) that do not record:\n"
			"%sif one of them answered the requests, this plan is of a process that did not: plan the "
			"command that answers itself (Django's runserver: --noreload)",
			c->rec.unrecorded.buf);
	for (k = 0; k < c->rec.nr_responses; k++) {
		int status = plan_response_status(&c->rec.responses[k]);
		const struct buf *resp = &c->rec.responses[k];
		const char *eol = memchr(resp->buf, '\r', resp->len);

		if (c->rec.early_request == k + 1) {
			error("request %zu ('%s') was answered '%.*s' after %llu of its %llu bytes: the target did "
			      "not read it whole, so no plan is made from it; send a request it accepts",
			      k + 1, c->r.bodies[k].path, eol ? (int)(eol - resp->buf) : 0, resp->buf,
			      (unsigned long long)c->rec.early_sent, (unsigned long long)c->r.bodies[k].size);
			rc = EXIT_TARGET_FAILED;
			goto out;
		}
		if (status >= 400 && status < 500)
			warning("request %zu was answered %d: the plan is made from the path of that answer", k + 1,
				status);
		if (status >= 500) {
			error("request %zu was answered %d: the target failed, and a plan made from a failing "
			      "request would defer what the working path needs; fix the request or the target",
			      k + 1, status);
			if (c->rec.stderr_tail.len)
				fprintf(stderr, "-- the target's last stderr output:\n%s\n", c->rec.stderr_tail.buf);
			rc = EXIT_TARGET_FAILED;
			goto out;
		}
	}
	rc = plan_load(c->tmp.buf, &c->d, &c->err);
	if (rc < 0) {
		error("%s", c->err.buf);
		rc = rc == -2 ? EXIT_NO_PYTHON : EXIT_FAIL;
	} else {
		rc = -1;
	}
out:
	buf_release(&note);
	buf_release(&perr);
	return rc;
}

int cmd_plan(int argc, char **argv)
{
	struct plan_cmd c;
	const char *datadir = coldstart_datadir();
	int ret;

	plan_cmd_init(&c);
	ret = parse_options(&c, argc, argv);
	if (ret < 0)
		ret = prepare_target(&c, datadir);
	if (ret >= 0)
		goto out;
	plan_target_setup_signals();
	/*
	 * What SIGKILLed runs left: their cgroups (with what still ran in them)
	 * and, in $TMPDIR, the FN_LISTENER and private directories of plans.
	 */
	cgroup_cleanup_stale();
	leftover_cleanup_dirs();
	if (private_dir_create(&c.work, "plan", &c.err) < 0) {
		error("%s", c.err.buf);
		ret = EXIT_FAIL;
		goto out;
	}
	set_environments(&c, datadir);
	ret = record(&c);
	if (ret >= 0)
		goto out;
	if (c.o.verify) {
		buf_reset(&c.err);
		ret = plan_verify(&c.r, c.tmp.buf, c.o.output, &c.d, &c.err);
		if (c.err.len)
			error("%s", c.err.buf);
		buf_reset(&c.err);
		/* The working directory as the recording left it, as without --verify. */
		if (c.files_after && plan_files_restore(c.files_after, &c.err) < 0)
			warning("verify: cannot put the working directory back as the recording left it: %s",
				c.err.buf);
		buf_reset(&c.err);
		if (ret != EXIT_OK)
			goto out;
	}
	if (plan_place_finish(c.d.root, c.tmp.buf, c.o.output, c.code_tmp.buf, c.code_out.buf, &c.err) < 0) {
		error("%s", c.err.buf);
		ret = EXIT_FAIL;
		goto out;
	}
	print_summary(c.o.output, &c.d);
	ret = EXIT_OK;
out:
	plan_cmd_release(&c);
	return ret;
}
