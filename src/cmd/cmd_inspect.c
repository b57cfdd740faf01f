/*
 * `coldstart inspect`: ELF facts about native extensions (given as files or
 * as module names an interpreter resolves) and about the interpreter itself.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "args.h"
#include "cmd/builtin.h"
#include "analysis/elf_report.h"
#include "elf/elf_json.h"
#include "elf/elf_python.h"
#include "elf/elf_resolve.h"
#include "elf/elffile.h"
#include "analysis/findings.h"
#include "sys/launch.h"
#include "model/native.h"
#include "model/profile.h"
#include "util.h"

#define PY_TIMEOUT_MS 60000
#define RESULT_TAG "\001coldstart\t"

/*
 * Prints sys.executable, then for each name "ok\t<origin>" or
 * "err\t<message>".  Python 2.7 has no importlib.util: import the module and
 * read __file__ instead.
 */
static const char resolve_script[] =
	"import sys\n"
	"T = '\\001coldstart\\t'\n"
	"sys.stdout.write(T + 'exe\\t' + (sys.executable or '') + '\\n')\n"
	"for n in sys.argv[1:]:\n"
	"    try:\n"
	"        try:\n"
	"            import importlib.util as u\n"
	"            s = u.find_spec(n)\n"
	"            o = s and s.origin\n"
	"            if s is None: raise ImportError('no module named ' + repr(n))\n"
	"        except ImportError:\n"
	"            if sys.version_info[0] > 2: raise\n"
	"            __import__(n); o = getattr(sys.modules[n], '__file__', None) or 'built-in'\n"
	"        sys.stdout.write(T + 'ok\\t' + str(o) + '\\n')\n"
	"    except Exception as e:\n"
	"        sys.stdout.write(T + 'err\\t' + str(e).replace('\\n', ' ') + '\\n')\n"
	"    sys.stdout.flush()\n";

struct target {
	char *arg; /* as given */
	char *module; /* when given as a module name */
	char *file; /* the file to read; NULL when the module has none */
	char *error; /* why it could not be resolved or read */
	struct elf_tree tree; /* empty on error */
};

struct inspect_opts {
	const char *profile;
	const char *python;
	bool python_given;
	bool json;
	bool no_python;
	bool tree;
};

static const struct usage inspect_usage = {
	.command = "inspect",
	.synopsis = "usage: coldstart inspect [--python PATH] [--json] [--no-python]\n"
		    "                         [MODULE | FILE.so ...]\n"
		    "       coldstart inspect [--python PATH] [--json] --profile FILE.json\n"
		    "\n"
		    "ELF facts about native extensions: size and loadable segments, the DT_NEEDED\n"
		    "chain resolved as the dynamic loader does, relocations, symbols, debug info\n"
		    "and build-id.  With no MODULE or FILE, describes the interpreter: libpython\n"
		    "shared or static, and its version read from the binary.\n\n",
	.footer = "An argument with a '/' or ending in '.so' is a file; anything else is a module.\n"
		  "Exit status: 0 ok, 1 a file or module could not be read, 2 usage.\n",
};

static bool is_file_arg(const char *s)
{
	return strchr(s, '/') || ends_with(s, ".so") || strstr(s, ".so.");
}

/* Reads the child's stdout until EOF or the deadline; -1 on timeout. */
static int read_all(int fd, struct buf *out)
{
	int64_t deadline = now_ns() + (int64_t)PY_TIMEOUT_MS * 1000000;

	for (;;) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		int64_t left = (deadline - now_ns()) / 1000000;
		char chunk[8192];
		ssize_t n;
		int r;

		if (left <= 0)
			return -1;
		r = poll(&pfd, 1, (int)left);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		n = read(fd, chunk, sizeof(chunk));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return 0;
		buf_add(out, chunk, (size_t)n);
	}
}

/*
 * Runs the interpreter once: learns sys.executable and resolves the module
 * targets.  Returns 0, or -1 with err set when it cannot be run at all.
 */
static int ask_python(const char *python, struct target *t, size_t nr, char **exe, struct buf *err)
{
	struct child c;
	struct child_exit ex;
	struct buf out = BUF_INIT, errout = BUF_INIT;
	size_t i, next = 0;
	char *line, *eol;
	int ret = -1, timed_out;

	child_init(&c);
	strvec_push(&c.args, python);
	strvec_push(&c.args, "-c");
	strvec_push(&c.args, resolve_script);
	for (i = 0; i < nr; i++)
		if (t[i].module)
			strvec_push(&c.args, t[i].module);
	c.capture_stdout = true;
	c.null_stdin = true;
	if (child_start(&c, err))
		goto out;
	timed_out = read_all(c.out_fd, &out);
	if (timed_out)
		kill_tree(c.pid, SIGKILL, true);
	child_finish(&c, &ex);
	if (timed_out) {
		buf_addf(err, "'%s' did not answer within %d s", python, PY_TIMEOUT_MS / 1000);
		goto out;
	}
	/* Lines not starting with the tag are the modules' own output. */
	for (line = out.buf; line < out.buf + out.len; line = eol + 1) {
		char *p;

		eol = strchrnul(line, '\n');
		*eol = '\0';
		p = strstr(line, RESULT_TAG);
		if (!p)
			continue;
		p += strlen(RESULT_TAG);
		if (starts_with(p, "exe\t")) {
			free(*exe);
			*exe = p[4] ? xstrdup(p + 4) : NULL;
			continue;
		}
		while (next < nr && !t[next].module)
			next++;
		if (next >= nr)
			break;
		if (starts_with(p, "ok\t"))
			t[next].file = xstrdup(p + 3);
		else if (starts_with(p, "err\t"))
			t[next].error = xstrdup(p + 4);
		next++;
	}
	if (!*exe && (ex.signaled || ex.exit_code)) {
		buf_addf(err, "'%s' failed (%s %d)", python, ex.signaled ? "signal" : "exit status",
			 ex.signaled ? ex.term_signal : ex.exit_code);
		goto out;
	}
	ret = 0;
out:
	buf_release(&out);
	buf_release(&errout);
	child_release(&c);
	return ret;
}

/*
 * Turns a module's origin into a file to read, or an error for the user.
 * A FILE argument is left to the ELF reader, which says what it is instead
 * (a directory, not a regular file, not an ELF file).
 */
static void check_origin(struct target *t)
{
	char *f = t->file;
	struct buf msg = BUF_INIT;

	if (!f || t->error || !t->module)
		return;
	if (!strcmp(f, "built-in") || !strcmp(f, "frozen") || !strcmp(f, "None"))
		buf_addf(&msg, "'%s' is %s the interpreter: there is no file to inspect", t->module,
			 !strcmp(f, "None") ? "a namespace package, not" : "built into");
	else if (!ends_with(f, ".so") && !strstr(f, ".so."))
		buf_addf(&msg, "'%s' is not a native extension ('%s')", t->module, f);
	if (msg.len) {
		free(t->file);
		t->file = NULL;
		t->error = buf_detach(&msg, NULL);
	}
	buf_release(&msg);
}

static void text_facts(const struct elf_facts *f, struct buf *out)
{
	char scratch[32];
	size_t i;

	buf_addf(out, "  file      %s\n", f->path);
	buf_adds(out, "  size      ");
	buf_add_bytes(out, f->file_size);
	buf_addf(out, " on disk; %zu load segment%s: ", f->nr_load, f->nr_load == 1 ? "" : "s");
	buf_add_bytes(out, (int64_t)(f->load_filesz > INT64_MAX ? INT64_MAX : f->load_filesz));
	buf_adds(out, " from the file, ");
	buf_add_bytes(out, (int64_t)(f->load_memsz > INT64_MAX ? INT64_MAX : f->load_memsz));
	buf_adds(out, " mapped\n");
	buf_addf(out, "  elf       ELF%d %s %s, %s\n", f->elf_class, f->big_endian ? "MSB" : "LSB",
		 elf_machine_name(f->machine, scratch, sizeof(scratch)),
		 f->type == 3	? "shared object"
		 : f->type == 2 ? "executable"
				: "other type");
	if (f->soname)
		buf_addf(out, "  soname    %s\n", f->soname);
	if (f->rpath)
		buf_addf(out, "  rpath     %s\n", f->rpath);
	if (f->runpath)
		buf_addf(out, "  runpath   %s\n", f->runpath);
	buf_addf(out, "  relocs    %zu dynamic (%zu relative, %zu PLT)\n", f->nr_relocs, f->nr_relative,
		 f->nr_plt_relocs);
	buf_addf(out, "  symbols   %zu dynamic, %zu in .symtab\n", f->nr_dynsyms, f->nr_symtab);
	buf_adds(out, "  debug     ");
	if (elf_facts_unstripped(f)) {
		buf_addf(out, "unstripped: %zu debug sections (", f->nr_debug_sections);
		buf_add_bytes(out, (int64_t)f->debug_bytes);
		buf_adds(out, "), symbol table ");
		buf_add_bytes(out, (int64_t)f->symtab_bytes);
	} else {
		buf_adds(out, "stripped");
	}
	if (f->has_debuglink)
		buf_adds(out, "; debug info in a separate file (.gnu_debuglink)");
	buf_addch(out, '\n');
	buf_addf(out, "  build-id  %s\n", f->build_id ? f->build_id : "(none)");
	for (i = 0; i < f->warnings.nr; i++)
		buf_addf(out, "  warning   %s\n", f->warnings.v[i]);
}

/* After the count of the objects a library newly loads: their bytes, relocations, and those not found. */
static void add_totals(struct buf *out, const struct elf_totals *tot)
{
	if (tot->objects) {
		buf_adds(out, ": ");
		buf_add_bytes(out, tot->file_bytes);
		buf_addf(out, ", %zu relocs", tot->relocs);
	}
	if (tot->missing)
		buf_addf(out, "; %zu NOT FOUND", tot->missing);
	buf_addch(out, '\n');
}

static void text_tree(const struct elf_tree *t, struct buf *out)
{
	struct elf_totals tot;
	size_t i;

	elf_tree_totals(t, false, &tot);
	if (t->nr <= 1) {
		buf_adds(out, "  needs     nothing\n");
	} else {
		buf_addf(out, "  needs     %zu new object%s", tot.objects, tot.objects == 1 ? "" : "s");
		add_totals(out, &tot);
		elf_render_tree(t, "    ", out);
	}
	for (i = 0; i < t->warnings.nr; i++)
		buf_addf(out, "  warning   %s\n", t->warnings.v[i]);
}

static void text_python(const struct elf_python *py, struct buf *out)
{
	buf_addf(out, "interpreter %s\n", py->exe);
	buf_addf(out, "  version   %s\n", py->version ? py->version : "(not found in the binary)");
	if (py->shared)
		buf_addf(out, "  libpython shared: %s\n", py->libpython ? py->libpython : "NOT FOUND");
	else if (py->exe_facts && py->exe_facts->defines_python)
		buf_adds(out, "  libpython static (linked into the executable)\n");
	else
		buf_adds(out, "  libpython not found: this may not be a Python interpreter\n");
	if (py->exe_facts) {
		buf_adds(out, "  exe       ");
		elf_render_facts_line(py->exe_facts, out);
		buf_addch(out, '\n');
	}
	if (py->lib_facts) {
		buf_adds(out, "  lib       ");
		elf_render_facts_line(py->lib_facts, out);
		buf_addch(out, '\n');
	}
}

static void json_out(const struct elf_python *py, const struct target *t, size_t nr, struct buf *out)
{
	size_t i, k;

	buf_adds(out, "{\"interpreter\":");
	if (py)
		elf_python_to_json(py, out);
	else
		buf_adds(out, "null");
	buf_adds(out, ",\"objects\":[");
	for (i = 0; i < nr; i++) {
		const struct elf_tree *tree = &t[i].tree;
		struct elf_totals tot;

		if (i)
			buf_addch(out, ',');
		buf_adds(out, "{\"target\":");
		buf_add_json_str(out, t[i].arg, strlen(t[i].arg));
		buf_adds(out, ",\"module\":");
		if (t[i].module)
			buf_add_json_str(out, t[i].module, strlen(t[i].module));
		else
			buf_adds(out, "null");
		buf_adds(out, ",\"error\":");
		if (t[i].error)
			buf_add_json_str(out, t[i].error, strlen(t[i].error));
		else
			buf_adds(out, "null");
		if (tree->nr) {
			elf_tree_totals(tree, false, &tot);
			buf_adds(out, ",\"facts\":");
			elf_facts_to_json(tree->libs[0].facts, out);
			buf_adds(out, ",\"needs\":");
			elf_tree_to_json(tree, out);
			buf_addf(out,
				 ",\"needs_totals\":{\"objects\":%zu,\"missing\":%zu,"
				 "\"file_bytes\":%lld,\"mapped_bytes\":%llu,\"relocs\":%zu,"
				 "\"dynsyms\":%zu}",
				 tot.objects, tot.missing, (long long)tot.file_bytes,
				 (unsigned long long)tot.mapped_bytes, tot.relocs, tot.dynsyms);
			buf_adds(out, ",\"warnings\":[");
			for (k = 0; k < tree->warnings.nr; k++) {
				if (k)
					buf_addch(out, ',');
				buf_add_json_str(out, tree->warnings.v[k], strlen(tree->warnings.v[k]));
			}
			buf_addch(out, ']');
		}
		buf_addch(out, '}');
	}
	buf_adds(out, "]}\n");
}

static void add_cell(struct buf *out, struct buf *cell, int width)
{
	buf_addf(out, "  %*s", width, cell->buf);
	buf_reset(cell);
}

/* One line per object read: the summary before the details. */
static void text_table(const struct target *t, size_t nr, struct buf *out)
{
	struct buf cell = BUF_INIT;
	size_t i, rows = 0;
	int w = 6;

	for (i = 0; i < nr; i++) {
		const char *name = t[i].module ? t[i].module : t[i].arg;

		if (t[i].tree.nr && (int)strlen(name) > w)
			w = strlen(name) > 48 ? 48 : (int)strlen(name);
		rows += t[i].tree.nr > 0;
	}
	if (!rows)
		return;
	if (out->len)
		buf_addch(out, '\n');
	buf_addf(out, "%-*s  %10s  %10s  %8s  %s\n", w, "object", "file", "mapped", "relocs",
		 "libraries it newly loads (count: file bytes, relocs)");
	for (i = 0; i < nr; i++) {
		const struct elf_facts *f;
		struct elf_totals tot;

		if (!t[i].tree.nr)
			continue;
		f = t[i].tree.libs[0].facts;
		buf_addf(out, "%-*s", w, t[i].module ? t[i].module : t[i].arg);
		buf_add_bytes(&cell, f->file_size);
		add_cell(out, &cell, 10);
		buf_add_bytes(&cell, (int64_t)(f->load_memsz > INT64_MAX ? INT64_MAX : f->load_memsz));
		add_cell(out, &cell, 10);
		buf_addf(out, "  %8zu  ", f->nr_relocs);
		elf_tree_totals(&t[i].tree, false, &tot);
		buf_addf(out, "%zu", tot.objects);
		add_totals(out, &tot);
	}
	buf_release(&cell);
}

/*
 * Parses the command line into o and the MODULE/FILE arguments.  Returns -1
 * to go on, or the exit code after printing the help or a usage error.
 */
static int parse_args(int argc, char **argv, struct inspect_opts *o, struct strvec *args)
{
	const struct opt options[] = {
		OPT_STRING("python", 0, &o->python, "PATH",
			   "interpreter that resolves module names; its libraries count as loaded (default: python3)"),
		OPT_BOOL("no-python", 0, &o->no_python, "read FILEs alone, without running an interpreter"),
		OPT_STRING("profile", 0, &o->profile, "FILE",
			   "a saved profile's native extensions with their load times and native-* findings"),
		OPT_BOOL("json", 0, &o->json, "write JSON instead of text"),
		OPT_HELP("help", 0, NULL, "show this help"),
		OPT_END(),
	};
	struct buf err = BUF_INIT;
	int rc = args_parse_all(options, argc, argv, args, &err);

	if (rc)
		rc = usage_stop(&inspect_usage, options, rc, err.buf);
	else if (o->python && !*o->python)
		rc = usage_error(&inspect_usage, "--python needs a path");
	else if (o->profile && !*o->profile)
		rc = usage_error(&inspect_usage, "--profile needs a file");
	else if (o->no_python && o->python)
		rc = usage_error(&inspect_usage, "--python and --no-python cannot be used together");
	else if (o->profile && (args->nr || o->no_python))
		rc = usage_error(&inspect_usage, "--profile takes no MODULE or FILE and no --no-python");
	else
		rc = -1;
	o->python_given = o->python != NULL;
	if (!o->python)
		o->python = "python3";
	buf_release(&err);
	return rc;
}

static const struct finding_rules *const native_tables[] = { &elf_finding_rules, NULL };

static bool is_native_finding(const struct finding *f)
{
	size_t i;

	for (i = 0; i < elf_finding_rules.nr; i++)
		if (!strcmp(f->id, elf_finding_rules.v[i].id))
			return true;
	return false;
}

/* `inspect --profile`: the native section and findings of a saved profile. */
static int inspect_profile(const struct inspect_opts *o)
{
	struct profile p;
	struct buf err = BUF_INIT, out = BUF_INIT;
	struct strvec problems = STRVEC_INIT;
	size_t i, shown = 0;
	int ret = EXIT_FAIL;

	profile_init(&p);
	if (profile_read_json(&p, o->profile, &err)) {
		error("%s", err.buf);
		goto out;
	}
	if (o->python_given) {
		free(p.python);
		p.python = xstrdup(o->python);
	}
	elf_annotate_profile(&p, &problems);
	for (i = 0; i < problems.nr; i++)
		warning("%s", problems.v[i]);
	/* The native rules alone, over the facts just read: they replace the saved ones. */
	findings_run(&p, native_tables);
	if (o->json) {
		buf_adds(&out, "{\"native\":");
		native_set_to_json(&p.native, &out);
		buf_adds(&out, ",\"findings\":[");
		for (i = 0; i < p.nr_findings; i++) {
			const struct finding *f = &p.findings[i];

			if (!is_native_finding(f))
				continue;
			if (shown++)
				buf_addch(&out, ',');
			buf_adds(&out, "{\"id\":");
			buf_add_json_str(&out, f->id, strlen(f->id));
			buf_adds(&out, ",\"severity\":");
			buf_add_json_str(&out, f->severity, strlen(f->severity));
			buf_adds(&out, ",\"title\":");
			buf_add_json_str(&out, f->title, strlen(f->title));
			buf_adds(&out, ",\"evidence\":");
			buf_add_json_str(&out, f->evidence, strlen(f->evidence));
			buf_adds(&out, ",\"fix\":");
			buf_add_json_str(&out, f->fix, strlen(f->fix));
			buf_adds(&out, ",\"module\":");
			if (f->module)
				buf_add_json_str(&out, f->module, strlen(f->module));
			else
				buf_adds(&out, "null");
			buf_adds(&out, ",\"cost_us\":");
			buf_add_i64(&out, f->cost_us);
			buf_adds(&out, ",\"pids\":[");
			for (size_t k = 0; k < f->nr_pids; k++)
				buf_addf(&out, "%s%ld", k ? "," : "", f->pids[k]);
			buf_adds(&out, "]}");
		}
		buf_adds(&out, "]}\n");
	} else {
		elf_report_section(&p, SIZE_MAX, &out);
		if (!out.len)
			buf_adds(&out, "\nNative extensions\n  none with a known file (a profile "
				       "made with the tracer records them)\n");
		for (i = 0; i < p.nr_findings; i++) {
			const struct finding *f = &p.findings[i];

			if (!is_native_finding(f))
				continue;
			if (!shown++)
				buf_adds(&out, "\nFindings\n");
			buf_addf(&out, "  [%s] %s: %s\n    %s\n    fix: %s\n", f->severity, f->id, f->title,
				 f->evidence, f->fix);
		}
	}
	fwrite(out.buf, 1, out.len, stdout);
	ret = fflush(stdout) ? EXIT_FAIL : EXIT_OK;
out:
	profile_release(&p);
	strvec_clear(&problems);
	buf_release(&err);
	buf_release(&out);
	return ret;
}

int cmd_inspect(int argc, char **argv)
{
	struct inspect_opts o = { .python = NULL };
	struct strvec args = STRVEC_INIT;
	struct elf_resolver r;
	struct elf_python py;
	struct target *t = NULL;
	struct buf out = BUF_INIT, err = BUF_INIT;
	char *exe = NULL;
	bool have_py = false, any_module = false;
	size_t i, nr = 0;
	int ret = EXIT_OK, pr;

	elf_resolver_init(&r);
	elf_python_init(&py);
	pr = parse_args(argc, argv, &o, &args);
	if (pr >= 0) {
		ret = pr;
		goto out;
	}
	if (o.profile) {
		ret = inspect_profile(&o);
		goto out;
	}
	nr = args.nr;
	t = xcalloc(nr ? nr : 1, sizeof(*t));
	for (i = 0; i < nr; i++) {
		elf_tree_init(&t[i].tree);
		t[i].arg = xstrdup(args.v[i]);
		if (is_file_arg(args.v[i]) || !access(args.v[i], F_OK)) {
			t[i].file = xstrdup(args.v[i]);
		} else {
			t[i].module = xstrdup(args.v[i]);
			any_module = true;
		}
	}
	if (any_module && o.no_python) {
		ret = usage_error(&inspect_usage, "module names need an interpreter; drop --no-python or give files");
		goto out;
	}
	if (!o.no_python) {
		if (ask_python(o.python, t, nr, &exe, &err)) {
			/* Files can still be read alone; modules and the interpreter cannot. */
			if (any_module || !nr || o.python_given) {
				error("%s", err.buf);
				ret = EXIT_FAIL;
				goto out;
			}
			buf_reset(&err);
		} else {
			const char *path = exe ? exe : o.python;

			if (elf_python_inspect(&r, path, &py, &err)) {
				error("%s", err.buf);
				ret = EXIT_FAIL;
				goto out;
			}
			have_py = true;
		}
	}
	for (i = 0; i < nr; i++)
		check_origin(&t[i]);

	/* In argument order, into one modelled process, as imports would. */
	for (i = 0; i < nr; i++) {
		buf_reset(&err);
		if (t[i].error) {
			error("%s", t[i].error);
			ret = EXIT_FAIL;
		} else if (elf_resolve(&r, t[i].file, &t[i].tree, &err)) {
			error("%s", err.buf);
			t[i].error = buf_detach(&err, NULL);
			ret = EXIT_FAIL;
		}
	}
	if (o.json) {
		json_out(have_py ? &py : NULL, t, nr, &out);
	} else {
		if (have_py && (!nr || o.python_given))
			text_python(&py, &out);
		text_table(t, nr, &out);
		for (i = 0; i < nr; i++) {
			if (!t[i].tree.nr)
				continue;
			buf_addf(&out, "\n%s\n", t[i].module ? t[i].module : t[i].arg);
			text_facts(t[i].tree.libs[0].facts, &out);
			text_tree(&t[i].tree, &out);
		}
	}
	fwrite(out.buf, 1, out.len, stdout);
	if (fflush(stdout))
		ret = EXIT_FAIL;
out:
	for (i = 0; i < nr; i++) {
		free(t[i].arg);
		free(t[i].module);
		free(t[i].file);
		free(t[i].error);
		elf_tree_release(&t[i].tree);
	}
	free(t);
	free(exe);
	strvec_clear(&args);
	elf_python_release(&py);
	elf_resolver_release(&r);
	buf_release(&out);
	buf_release(&err);
	return ret;
}
