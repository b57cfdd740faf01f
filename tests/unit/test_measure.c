/*
 * The measuring session: the interpreter probe's answer read through a
 * target whose probe hook replays what an interpreter printed (the real
 * interpreters are the e2e tests' business), and the run sequence (baseline,
 * warm-up, measured), the hooks around each run and the exit codes, with
 * real processes through the local target.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd/builtin.h"
#include "session/measure.h"
#include "util.h"

/* What the probe hook answers: an exit status and what was printed. */
struct replay {
	int status;
	const char *out;
	const char *errout;
	const char *err;
	const char *python_seen;
	int begun, ended, end_code;
	bool last_failed, last_no_exec; /* what the runner's failure said to the last run_end */
};

static int replay_probe(void *self, const char *python, const char *const *args, struct buf *out, struct buf *errout,
			struct buf *err)
{
	struct replay *r = self;

	r->python_seen = python;
	/* The probe is run with -E -s -c CODE. */
	assert_string_equal(args[0], "-E");
	assert_string_equal(args[1], "-s");
	assert_string_equal(args[2], "-c");
	assert_non_null(strstr(args[3], "sys.version_info"));
	assert_null(args[4]);
	if (r->err)
		buf_adds(err, r->err);
	buf_adds(out, r->out ? r->out : "");
	buf_adds(errout, r->errout ? r->errout : "");
	return r->status;
}

static int count_begin(void *self, struct run *run, size_t index, struct buf *err)
{
	((struct replay *)self)->begun++;
	return 0;
}

static int count_end(void *self, struct profile *p, struct run *run, const struct runner_failure *why)
{
	struct replay *r = self;

	r->ended++;
	r->last_failed = why != NULL;
	r->last_no_exec = why && why->no_exec;
	return r->end_code;
}

struct fixture {
	struct profile p;
	struct measure_opts m;
	struct measure_session s;
	struct measure_target t;
	struct replay r;
	struct buf err; /* what measure_probe says */
};

static struct fixture *setup(bool optional)
{
	struct fixture *f = xcalloc(1, sizeof(*f));

	profile_init(&f->p);
	measure_opts_init(&f->m);
	f->t.probe = replay_probe;
	f->t.self = &f->r;
	f->t.probe_optional = optional;
	measure_session_init(&f->s, &f->p, "profile", &f->m, NULL, &f->t);
	buf_init(&f->err, 0);
	return f;
}

static void teardown(struct fixture *f)
{
	buf_release(&f->err);
	measure_session_release(&f->s);
	measure_opts_release(&f->m);
	profile_release(&f->p);
	free(f);
}

static void test_probe_answer(void **state)
{
	struct fixture *f = setup(false);

	f->r.out = "3.11.2\n/usr/bin/python3.11\nabc asyncio json\ncpython-311\n"
		   ".cpython-311-x86_64-linux-gnu.so .abi3.so .so\n"
		   "/usr/lib/python3.11\t/usr/lib/python3.11/lib-dynload\t/usr/lib/python3/dist-packages\n"
		   "/usr/lib/python3/dist-packages\n\n/root/.local/x\n";
	assert_int_equal(measure_probe(&f->s, "python3", "at 'python3'", &f->err), 0);
	assert_int_equal(f->err.len, 0);
	assert_string_equal(f->s.executable, "/usr/bin/python3.11");
	assert_string_equal(f->s.cache_tag, "cpython-311");
	assert_int_equal(f->s.ext_suffixes.nr, 3);
	assert_string_equal(f->s.ext_suffixes.v[2], ".so");
	assert_int_equal(f->s.search_dirs.nr, 3);
	assert_string_equal(f->s.search_dirs.v[1], "/usr/lib/python3.11/lib-dynload");
	assert_string_equal(f->r.python_seen, "python3");
	assert_string_equal(f->p.python_version, "3.11.2");
	assert_int_equal(f->s.stdlib_names.nr, 3);
	assert_string_equal(f->s.stdlib_names.v[1], "asyncio");
	assert_int_equal(f->s.site_dirs.nr, 2);
	assert_string_equal(f->s.site_dirs.v[0], "/usr/lib/python3/dist-packages");
	assert_string_equal(f->s.site_dirs.v[1], "/root/.local/x");
	/* The session stamped the profile. */
	assert_string_equal(f->p.command, "profile");
	assert_non_null(f->p.created);
	assert_int_equal(strlen(f->p.created), strlen("2026-01-01T00:00:00Z"));
	teardown(f);

	/* 3.7 and 3.8 print no stdlib_module_names: an empty line. */
	f = setup(false);
	f->r.out = "3.7.17\n/x/python3.7\n\n";
	assert_int_equal(measure_probe(&f->s, "python3.7", "at 'x'", &f->err), 0);
	assert_int_equal(f->s.stdlib_names.nr, 0);
	teardown(f);
}

static void test_probe_refusals(void **state)
{
	struct fixture *f;

	/* Older than 3.7: no -X importtime, whatever the target. */
	f = setup(true);
	f->r.out = "3.6.15\n/usr/bin/python3.6\n\n";
	assert_int_equal(measure_probe(&f->s, "python3", "in image 'old'", &f->err), EXIT_NO_PYTHON);
	assert_string_equal(f->err.buf,
			    "Python 3.6.15 in image 'old' has no -X importtime (it needs Python 3.7 or newer)");
	teardown(f);

	/* Not Python: an error on this host ... */
	f = setup(false);
	f->r.status = 1;
	f->r.errout = "Traceback (most recent call last):\n  File x\nImportError: no site\n";
	assert_int_equal(measure_probe(&f->s, "python3", "at 'python3'", &f->err), EXIT_NO_PYTHON);
	assert_string_equal(f->err.buf,
			    "'python3' does not behave like a Python interpreter (status 1: ImportError: no site)");
	assert_int_equal(f->p.nr_warnings, 0);
	teardown(f);

	/* ... a warning and importtime only where the target allows it. */
	f = setup(true);
	f->r.status = 1;
	f->r.errout = "Traceback (most recent call last):\nImportError: no site\n";
	assert_int_equal(measure_probe(&f->s, "python3", "in image 'x'", &f->err), -1);
	assert_int_equal(f->err.len, 0);
	assert_int_equal(f->p.nr_warnings, 1);
	assert_string_equal(f->p.warnings[0].msg, "cannot ask 'python3' in image 'x' for its version "
						  "(status 1: ImportError: no site); importtime only");
	assert_null(f->p.python_version);
	teardown(f);

	/* Exit 0 without a version is no answer either. */
	f = setup(true);
	f->r.out = "hello\n";
	assert_int_equal(measure_probe(&f->s, "echo", "in image 'x'", &f->err), -1);
	assert_non_null(strstr(f->p.warnings[0].msg, "(status 0: hello)"));
	teardown(f);

	/* Could not be run at all. */
	f = setup(false);
	f->r.status = -1;
	f->r.err = "cannot run 'nope': No such file or directory";
	assert_int_equal(measure_probe(&f->s, "nope", "at 'nope'", &f->err), EXIT_NO_PYTHON);
	assert_string_equal(f->err.buf, "cannot run 'nope': No such file or directory");
	teardown(f);

	/* --cold where the target's files are not this host's: a usage error, before any probe. */
	f = setup(true);
	f->m.cold = true;
	assert_int_equal(measure_probe(&f->s, "python3", "in image 'x'", &f->err), EXIT_USAGE);
	assert_string_equal(f->err.buf, "--cold evicts this host's page cache, and the target's files are not on "
					"this host (a container's image): run it with 'coldstart profile'");
	assert_null(f->r.python_seen);
	teardown(f);
}

/* The real local target, with the hooks of the replay target around it. */
static struct fixture *setup_runs(const char *const *argv, int runs, int warmup, bool baseline)
{
	struct fixture *f = setup(false);

	f->t = measure_local;
	f->t.run_begin = count_begin;
	f->t.run_end = count_end;
	f->t.self = &f->r;
	f->m.runs = runs;
	f->m.warmup = warmup;
	f->m.quiet = true;
	f->s.ro.argv = argv;
	f->s.baseline = baseline;
	return f;
}

static void test_run_sequence(void **state)
{
	static const char *const ok[] = { "/bin/sh", "-c", "exit 0", NULL };
	struct fixture *f = setup_runs(ok, 2, 1, true);
	size_t i;

	assert_int_equal(measure_run(&f->s), 0);
	/* As many unconstrained runs as measured ones, then the warm-up, then the measured runs. */
	assert_int_equal(f->p.nr_runs, 5);
	for (i = 0; i < 2; i++)
		assert_true(f->p.runs[i].baseline && f->p.runs[i].warmup);
	assert_true(!f->p.runs[2].baseline && f->p.runs[2].warmup);
	for (i = 3; i < 5; i++)
		assert_true(!f->p.runs[i].baseline && !f->p.runs[i].warmup);
	for (i = 0; i < 5; i++) {
		assert_int_equal(f->p.runs[i].status, RUN_EXITED);
		assert_int_equal(f->p.runs[i].exit_code, 0);
	}
	assert_int_equal(f->r.begun, 5);
	assert_int_equal(f->r.ended, 5);
	assert_false(f->r.last_failed);
	teardown(f);
}

static void test_run_exit_codes(void **state)
{
	static const char *const ok[] = { "/bin/sh", "-c", "exit 0", NULL };
	static const char *const missing[] = { "/nonexistent/coldstart-test-program", NULL };
	struct fixture *f;

	/* The target's hook ends the session with its code after the first run. */
	f = setup_runs(ok, 3, 0, false);
	f->r.end_code = 42;
	assert_int_equal(measure_run(&f->s), 42);
	assert_int_equal(f->p.nr_runs, 1);
	teardown(f);

	/* A program that cannot be executed: EXIT_NO_PYTHON, unless the hook says otherwise. */
	f = setup_runs(missing, 2, 0, false);
	assert_int_equal(measure_run(&f->s), EXIT_NO_PYTHON);
	assert_true(f->r.last_failed && f->r.last_no_exec);
	assert_int_equal(f->p.nr_runs, 1);
	teardown(f);
	f = setup_runs(missing, 2, 0, false);
	f->r.end_code = EXIT_NO_ENGINE + 10;
	assert_int_equal(measure_run(&f->s), EXIT_NO_ENGINE + 10);
	teardown(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_probe_answer),
		cmocka_unit_test(test_probe_refusals),
		cmocka_unit_test(test_run_sequence),
		cmocka_unit_test(test_run_exit_codes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
