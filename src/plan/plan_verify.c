/*
 * Reading a recorded plan back, the runs of the target, and --verify: the
 * responses with the plan must be those without it; when one differs, a
 * bisection over the lazy from-imports and then the deferred modules (in
 * import order) finds one to keep eager, again until the plan answers the
 * same (plan_verify.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "exit.h"
#include "plan/plan_verify.h"
#include "util.h"

const char *plan_mod_str(json_t *m, const char *key)
{
	json_t *v = json_object_get(m, key);

	return json_is_string(v) ? json_string_value(v) : "";
}

int64_t plan_mod_int(json_t *m, const char *key)
{
	json_t *v = json_object_get(m, key);

	return json_is_integer(v) ? (int64_t)json_integer_value(v) : 0;
}

int plan_load(const char *path, struct plan_doc *d, struct buf *err)
{
	json_error_t jerr;
	json_t *fmt, *ver;

	d->root = json_load_file(path, 0, &jerr);
	if (!d->root) {
		buf_addf(err, "cannot read the plan '%s': %s (line %d)", path, jerr.text, jerr.line);
		return -1;
	}
	fmt = json_object_get(d->root, "format");
	/*
	 * Instead of a plan: the bootstrap's answer when the interpreter cannot
	 * be planned (-2), or the recorder's when it failed ("code": "recorder").
	 */
	if (json_is_string(fmt) && !strcmp(json_string_value(fmt), "coldstart-plan-error")) {
		json_t *code = json_object_get(d->root, "code");
		const char *msg = plan_mod_str(d->root, "error");
		int rc = -1;

		/*
		 * Only the bootstrap's own answer (no "code", a message) means
		 * the interpreter cannot be planned; a record with other fields
		 * is a failure that says what it holds, never an empty message.
		 */
		if (!*msg)
			buf_addf(err, "the planning run wrote an error record without a message ('%s')", path);
		else {
			buf_adds(err, msg);
			if (!code)
				rc = -2;
		}
		json_decref(d->root);
		d->root = NULL;
		return rc;
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

int plan_write_json(json_t *root, const char *path, struct buf *err)
{
	int fd;

	if (unlink(path) < 0 && errno != ENOENT) {
		buf_addf(err, "cannot write '%s': %s", path, strerror(errno));
		return -1;
	}
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
	if (fd < 0 || json_dumpfd(root, fd, JSON_COMPACT | JSON_ENSURE_ASCII) < 0 || close(fd) < 0) {
		buf_addf(err, "cannot write '%s': %s", path, strerror(errno));
		if (fd >= 0) {
			close(fd);
			unlink(path);
		}
		return -1;
	}
	return 0;
}

/*
 * Sets the action of the deferred modules among names[0..k) to action, in
 * the module list (marked "forced" with forced) and in the applier's
 * index; returns how many there were.
 */
static size_t set_actions(json_t *root, const char *const *names, size_t k, const char *action, bool forced)
{
	json_t *mods = json_object_get(root, "modules");
	json_t *index = json_object_get(root, "index");
	size_t i, j, n = 0;

	for (i = 0; i < json_array_size(mods); i++) {
		json_t *m = json_array_get(mods, i);

		for (j = 0; j < k; j++)
			if (!strcmp(plan_mod_str(m, "action"), "defer") && !strcmp(plan_mod_str(m, "name"), names[j])) {
				json_object_set_new(m, "action", json_string(action));
				if (forced)
					json_object_set_new(m, "forced", json_true());
				n++;
				break;
			}
	}
	/* The applier's compact rows: [name, kind, path, size, mtime_ns, action, ...]. */
	for (i = 0; i < json_array_size(index); i++) {
		json_t *row = json_array_get(index, i);
		const char *name = json_string_value(json_array_get(row, 0));
		const char *was = json_string_value(json_array_get(row, 5));

		for (j = 0; name && was && !strcmp(was, "defer") && j < k; j++)
			if (!strcmp(name, names[j])) {
				json_array_set_new(row, 5, json_string(action));
				break;
			}
	}
	return n;
}

/*
 * Writes a copy of the plan where the first k deferred modules load
 * eagerly and the first nf modules of froms (all of them: nf == SIZE_MAX)
 * bind their from-imports eagerly.
 */
static int write_variant(const struct plan_doc *d, const char *const *names, size_t k, const char *const *froms,
			 size_t nf, const char *path, struct buf *err)
{
	json_t *copy = json_deep_copy(d->root);
	json_t *from = json_object_get(copy, "from");
	size_t j;
	int ret = 0;

	if (json_is_object(from)) {
		if (nf == SIZE_MAX)
			json_object_clear(from);
		for (j = 0; nf != SIZE_MAX && j < nf; j++)
			json_object_del(from, froms[j]);
	}
	set_actions(copy, names, k, "eager", false);
	if (plan_write_json(copy, path, err) < 0)
		ret = -1;
	json_decref(copy);
	return ret;
}

int plan_exit_for(enum plan_status st)
{
	switch (st) {
	case PLAN_RUN_OK: return EXIT_OK;
	case PLAN_RUN_NO_EXEC: return EXIT_NO_PYTHON;
	case PLAN_RUN_EXITED: return EXIT_TARGET_FAILED;
	case PLAN_RUN_NOT_READY: return EXIT_NOT_READY;
	case PLAN_RUN_TIMEOUT: return EXIT_TARGET_TIMEOUT;
	case PLAN_RUN_INTERRUPTED: return 128 + plan_target_interrupted();
	case PLAN_RUN_FAILED: break;
	}
	return EXIT_FAIL;
}

void plan_failure_message(struct buf *out, const char *what, enum plan_status st, const struct plan_outcome *o,
			  const struct buf *err)
{
	const struct buf *tail = &o->stderr_tail;

	buf_addf(out, "%s: %s", what, err->buf);
	if (st != PLAN_RUN_INTERRUPTED && tail->len) {
		buf_adds(out, "\n-- the target's last stderr output:\n");
		buf_add(out, tail->buf, tail->len - (tail->buf[tail->len - 1] == '\n'));
	}
}

int plan_response_status(const struct buf *resp)
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

enum plan_status plan_run_once(struct plan_run *r, const struct strvec *env, const char *record, struct plan_outcome *o,
			       struct buf *err)
{
	enum plan_status st;

	r->t.env = env->v;
	r->t.record_path = record;
	plan_outcome_init(o);
	if (r->files && !record && plan_files_restore(r->files, err) < 0) {
		buf_addf(err, " (putting the working directory back as the recording found it)");
		return PLAN_RUN_FAILED;
	}
	st = plan_target_run(&r->t, o, err);
	if (r->files && !record)
		plan_files_diff(r->files, &o->files);
	return st;
}

/* resp with every match of r's masks replaced by "<masked>" (NUL bytes and all: REG_STARTEND). */
static void masked(const struct plan_run *r, const struct buf *resp, struct buf *out)
{
	struct buf cur = BUF_INIT;
	size_t k;

	buf_reset(out);
	buf_add(out, resp->buf, resp->len);
	for (k = 0; k < r->nr_masks; k++) {
		size_t at = 0;
		regmatch_t m;

		buf_reset(&cur);
		buf_add(&cur, out->buf, out->len);
		buf_reset(out);
		while (at <= cur.len) {
			m.rm_so = (regoff_t)at;
			m.rm_eo = (regoff_t)cur.len;
			if (regexec(&r->masks[k], cur.buf, 1, &m, REG_STARTEND | (at ? REG_NOTBOL : 0)))
				break;
			buf_add(out, cur.buf + at, (size_t)m.rm_so - at);
			buf_adds(out, "<masked>");
			if (m.rm_eo == m.rm_so) {
				/* An empty match: keep one byte and go on after it. */
				if ((size_t)m.rm_eo < cur.len)
					buf_add(out, cur.buf + m.rm_eo, 1);
				at = (size_t)m.rm_eo + 1;
			} else {
				at = (size_t)m.rm_eo;
			}
		}
		if (at < cur.len)
			buf_add(out, cur.buf + at, cur.len - at);
	}
	buf_release(&cur);
}

static bool same_response(const struct plan_run *r, const struct buf *a, const struct buf *b)
{
	struct buf ma = BUF_INIT, mb = BUF_INIT;
	bool same;

	if (!r->nr_masks)
		return a->len == b->len && !memcmp(a->buf, b->buf, a->len);
	masked(r, a, &ma);
	masked(r, b, &mb);
	same = ma.len == mb.len && !memcmp(ma.buf, mb.buf, ma.len);
	buf_release(&ma);
	buf_release(&mb);
	return same;
}

static bool same_responses(const struct plan_run *r, const struct plan_outcome *a, const struct plan_outcome *b,
			   size_t *which)
{
	size_t i;

	for (i = 0; i < a->nr_responses && i < b->nr_responses; i++)
		if (!same_response(r, &a->responses[i], &b->responses[i])) {
			*which = i;
			return false;
		}
	*which = i;
	if (a->nr_responses != b->nr_responses)
		return false;
	/* Then the files written under the working directory: "response" nr + 1. */
	return same_response(r, &a->files, &b->files);
}

/* Runs with plan file path applied; 1 same responses as base, 0 differ, -1 failed. */
static int try_plan(struct plan_run *r, const char *path, const struct plan_outcome *base, size_t *which,
		    struct buf *err, enum plan_status *st)
{
	struct plan_outcome o;
	int ret;

	strvec_setenv(&r->env_apply, "COLDSTART_PLAN", path);
	*st = plan_run_once(r, &r->env_apply, NULL, &o, err);
	if (*st == PLAN_RUN_INTERRUPTED) {
		plan_outcome_release(&o);
		return -1;
	}
	/* A run that fails with the plan differs from one that answered without it. */
	ret = *st == PLAN_RUN_OK && same_responses(r, base, &o, which);
	if (*st != PLAN_RUN_OK)
		*which = o.nr_responses;
	plan_outcome_release(&o);
	buf_reset(err);
	return ret;
}

static void show_diff(const struct plan_outcome *a, size_t which)
{
	if (which == a->nr_responses)
		fprintf(stderr, "coldstart plan: with the plan, the files written under the working directory differ "
				"from those without it\n");
	else
		fprintf(stderr, "coldstart plan: with the plan, response %zu of %zu differs from the one without it\n",
			which + 1, a->nr_responses);
}

/* One verification: the runs, the plan read back, and the variants tried. */
struct verify {
	struct plan_run *r;
	const char *output; /* the plan file, named in the refusal */
	struct plan_outcome base; /* the responses without the plan */
	struct plan_doc d;
	const char **names; /* the deferred modules, in import order */
	size_t nr;
	const char **froms; /* the modules with lazy from-imports, in import order */
	size_t nf;
	struct buf variant; /* the path of the variant plan */
	struct buf err; /* a step's own error */
	struct buf *why; /* the caller's: why the verification stopped */
	int ret; /* the exit status once a step stops */
};

/*
 * Runs the variant of the plan with the first k deferred modules eager and
 * the first nf modules of froms binding eagerly (plan: write_variant).
 * Returns 1 same responses as without the plan, 0 not, -1 stop (v->ret).
 */
static int try_variant(struct verify *v, size_t k, size_t nf)
{
	enum plan_status st;
	size_t which = 0;
	int ok;

	if (write_variant(&v->d, v->names, k, v->froms, nf, v->variant.buf, &v->err) < 0) {
		buf_add(v->why, v->err.buf, v->err.len);
		v->ret = EXIT_FAIL;
		return -1;
	}
	ok = try_plan(v->r, v->variant.buf, &v->base, &which, &v->err, &st);
	if (ok < 0)
		v->ret = plan_exit_for(st);
	return ok;
}

/*
 * The shortest prefix (of froms when from, else of the deferred modules)
 * that, kept eager, gives the responses back, given that all n of them do
 * and none do not: its last entry is the one whose laziness changes them.
 * Returns 0 with *found its length, -1 stop (v->ret).
 */
static int bisect(struct verify *v, bool from, size_t n, size_t *found)
{
	size_t lo = 0, hi = n;

	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;
		int ok = from ? try_variant(v, 0, mid) : try_variant(v, mid, SIZE_MAX);

		if (ok < 0)
			return -1;
		if (ok)
			hi = mid;
		else
			lo = mid;
	}
	*found = hi;
	return 0;
}

/* The deferred modules and the modules with lazy from-imports, in import order. */
static void collect_lazy(struct verify *v)
{
	json_t *from = json_object_get(v->d.root, "from");
	size_t i;

	for (i = 0; i < json_array_size(v->d.modules); i++) {
		json_t *m = json_array_get(v->d.modules, i);

		if (!strcmp(plan_mod_str(m, "action"), "defer")) {
			v->names = xrealloc(v->names, st_mult(v->nr + 1, sizeof(*v->names)));
			v->names[v->nr++] = plan_mod_str(m, "name");
		}
	}
	for (i = 0; json_is_object(from) && i < json_array_size(v->d.modules); i++) {
		const char *name = plan_mod_str(json_array_get(v->d.modules, i), "name");

		if (json_object_get(from, name)) {
			v->froms = xrealloc(v->froms, st_mult(v->nf + 1, sizeof(*v->froms)));
			v->froms[v->nf++] = name;
		}
	}
}

/*
 * One cause in the plan v->d: first the lazy from-imports (when binding
 * them all eagerly gives the responses back, the module whose from-imports
 * do it: *from true), then the deferred modules, with every from-import
 * bound eagerly.  Returns 1 with *name found, 0 when there is none to find
 * (v->why says so), -1 stop (v->ret).
 */
static int find_one(struct verify *v, const char **name, bool *from)
{
	size_t found;
	int ok;

	free(v->names);
	free(v->froms);
	v->names = v->froms = NULL;
	v->nr = v->nf = 0;
	collect_lazy(v);
	if (v->nf) {
		ok = try_variant(v, 0, SIZE_MAX);
		if (ok < 0)
			return -1;
		if (ok) {
			if (bisect(v, true, v->nf, &found) < 0)
				return -1;
			*name = v->froms[found - 1];
			*from = true;
			return 1;
		}
	}
	ok = try_variant(v, v->nr, SIZE_MAX);
	if (ok < 0)
		return -1;
	if (!ok) {
		buf_adds(v->why,
			 "verify: the responses differ even with nothing deferred: the module index itself changes "
			 "them (a module found elsewhere than its recorded file?); plan was not written");
		return 0;
	}
	/* Nothing deferred, yet the plan's own copy gives the responses back. */
	if (!v->nr) {
		buf_adds(v->why,
			 "verify: the plan defers nothing, yet a response differed with it and not with its copy: the "
			 "target's answers are not reproducible, so the plan cannot be verified; plan was not written");
		return 0;
	}
	if (bisect(v, false, v->nr, &found) < 0)
		return -1;
	*name = v->names[found - 1];
	*from = false;
	return 1;
}

/* Keeps name eager in v->d (from: binds its from-imports eagerly), saying why in its entry. */
static void keep(struct verify *v, const char *name, bool from)
{
	json_t *mods = json_object_get(v->d.root, "modules");
	size_t i;

	if (from)
		json_object_del(json_object_get(v->d.root, "from"), name);
	else
		set_actions(v->d.root, &name, 1, "eager", false);
	for (i = 0; i < json_array_size(mods); i++) {
		json_t *m = json_array_get(mods, i), *reasons;

		if (strcmp(plan_mod_str(m, "name"), name))
			continue;
		if (from) {
			json_object_set_new(m, "lazy_from_off",
					    json_string("binding them lazily changed the responses "
							"(coldstart plan --verify)"));
			json_object_del(m, "lazy_from");
			break;
		}
		reasons = json_object_get(m, "reasons");
		if (!json_is_array(reasons)) {
			reasons = json_array();
			json_object_set_new(m, "reasons", reasons);
		}
		json_array_append_new(reasons,
				      json_pack("{s:s, s:s}", "code", "verify", "detail",
						"deferring it changed the responses (coldstart plan --verify)"));
		break;
	}
}

static void recount(json_t *root);

/*
 * The plan changed a response: keeps eager, one after the other, every
 * module (or module's from-imports) whose laziness changes the responses,
 * until the plan gives them back, when the target's answers are
 * reproducible.  On success the plan in tmp and d are the fixed plan and
 * v->ret is EXIT_OK.
 */
static void find_causes(struct verify *v, const char *tmp, struct plan_doc *d)
{
	struct plan_outcome again;
	struct strvec kept = STRVEC_INIT, bound = STRVEC_INIT;
	enum plan_status st;
	size_t which = 0, round;

	/* A target that answers differently every time cannot be verified. */
	st = plan_run_once(v->r, &v->r->env_plain, NULL, &again, &v->err);
	if (st == PLAN_RUN_OK && !same_responses(v->r, &v->base, &again, &which)) {
		if (which == v->base.nr_responses)
			buf_addf(
				v->why,
				"verify: the files written under the working directory differ between two runs without "
				"the plan:\n%s--\n%sthe target's answers are not reproducible, so the plan cannot be "
				"verified (--mask cannot hide files); plan was not written",
				v->base.files.buf, again.files.buf);
		else
			buf_addf(v->why,
				 "verify: response %zu differs between two runs without the plan: the target's answers "
				 "are not reproducible, so the plan cannot be verified; plan was not written",
				 which + 1);
		plan_outcome_release(&again);
		return;
	}
	plan_outcome_release(&again);
	if (plan_load(tmp, &v->d, &v->err) < 0) {
		buf_add(v->why, v->err.buf, v->err.len);
		return;
	}
	buf_addf(&v->variant, "%s.bisect", tmp);
	for (round = 0; round < 64; round++) {
		const char *name = NULL;
		bool from = false;
		int ok;

		if (find_one(v, &name, &from) <= 0)
			goto out;
		if (from) {
			printf("coldstart plan: verify: binding the from-imports of '%s' lazily changes the responses: "
			       "they bind at once (as with --eager-from %s)\n",
			       name, name);
			strvec_push(&bound, name);
		} else {
			printf("coldstart plan: verify: deferring '%s' changes the responses: it stays eager (as with "
			       "--eager %s)\n",
			       name, name);
			strvec_push(&kept, name);
		}
		keep(v, name, from);
		ok = try_variant(v, 0, 0);
		if (ok < 0)
			goto out;
		if (ok)
			break;
	}
	if (round == 64) {
		buf_adds(v->why,
			 "verify: the responses still differ after keeping 64 modules eager; plan was not written");
		goto out;
	}
	recount(v->d.root);
	if (plan_write_json(v->d.root, tmp, &v->err) < 0) {
		buf_add(v->why, v->err.buf, v->err.len);
		goto out;
	}
	json_decref(d->root);
	d->root = json_incref(v->d.root);
	d->modules = json_object_get(d->root, "modules");
	printf("coldstart plan: verified: %zu response%s identical with the plan once %zu module%s stayed eager and "
	       "%zu bound %s from-imports at once\n",
	       v->base.nr_responses, v->base.nr_responses == 1 ? "" : "s", kept.nr, kept.nr == 1 ? "" : "s", bound.nr,
	       bound.nr == 1 ? "its" : "their");
	v->ret = EXIT_OK;
out:
	strvec_clear(&kept);
	strvec_clear(&bound);
}

/* The plan's "summary" counts and self times per action, from its module list. */
static void recount(json_t *root)
{
	static const char *const actions[] = { "load", "eager", "defer" };
	json_t *mods = json_object_get(root, "modules"), *sum = json_object_get(root, "summary");
	json_int_t count[3] = { 0, 0, 0 }, us[3] = { 0, 0, 0 };
	size_t i, a;
	char key[32];

	if (!json_is_object(sum))
		return;
	for (i = 0; i < json_array_size(mods); i++) {
		json_t *m = json_array_get(mods, i);

		for (a = 0; a < 3; a++)
			if (!strcmp(plan_mod_str(m, "action"), actions[a])) {
				count[a]++;
				us[a] += plan_mod_int(m, "self_us");
			}
	}
	for (a = 0; a < 3; a++) {
		json_object_set_new(sum, actions[a], json_integer(count[a]));
		snprintf(key, sizeof(key), "%s_self_us", actions[a]);
		json_object_set_new(sum, key, json_integer(us[a]));
	}
}

/*
 * The deferred modules whose bodies ran before the first response anyway
 * (read by a body that ran, or used), as the applier of the verified run
 * listed them in file path (COLDSTART_PLAN_FORCED_OUT): n names in *names,
 * the strings owned by *list; -1 when there is no list.
 */
static int forced_modules(const char *path, json_t **list, const char ***names, size_t *n)
{
	json_error_t jerr;
	size_t i;

	*names = NULL;
	*n = 0;
	*list = json_load_file(path, 0, &jerr);
	if (!json_is_array(*list))
		return -1;
	*names = xcalloc(json_array_size(*list) + 1, sizeof(**names));
	for (i = 0; i < json_array_size(*list); i++)
		if (json_is_string(json_array_get(*list, i)))
			(*names)[(*n)++] = json_string_value(json_array_get(*list, i));
	return 0;
}

/*
 * After the plan verified: the deferred modules that its verified run
 * forced before the first response anyway (listed in forced_path) load at
 * once instead (deferring them only cost the deferral), when that plan
 * answers the same too; d (the plan the command writes) and tmp are
 * updated then.  Never fails the verification: a plan that cannot be
 * improved stays as verified.
 */
static void load_forced(struct verify *v, const char *tmp, const char *forced_path, struct plan_doc *d)
{
	json_t *list, *copy;
	const char **names;
	size_t n, changed, which = 0;
	enum plan_status st;
	int ok;

	if (forced_modules(forced_path, &list, &names, &n) < 0 || !n)
		goto out;
	copy = json_deep_copy(d->root);
	changed = set_actions(copy, names, n, "load", true);
	recount(copy);
	buf_reset(&v->variant);
	buf_addf(&v->variant, "%s.forced-load", tmp);
	if (!changed || plan_write_json(copy, v->variant.buf, &v->err) < 0) {
		json_decref(copy);
		goto out;
	}
	ok = try_plan(v->r, v->variant.buf, &v->base, &which, &v->err, &st);
	if (ok < 0) {
		v->ret = plan_exit_for(st);
		json_decref(copy);
		goto out;
	}
	if (ok && rename(v->variant.buf, tmp) == 0) {
		json_decref(d->root);
		d->root = copy;
		d->modules = json_object_get(copy, "modules");
		printf("coldstart plan: %zu deferred module%s ran before the first response anyway: %s at once "
		       "(verified: the same responses)\n",
		       changed, changed == 1 ? "" : "s", changed == 1 ? "it loads" : "they load");
	} else {
		json_decref(copy);
		if (!ok)
			printf("coldstart plan: loading at once the %zu deferred modules the first response forces "
			       "changed response %zu: they stay deferred\n",
			       changed, which + 1);
	}
out:
	free(names);
	json_decref(list);
}

int plan_verify(struct plan_run *r, const char *tmp, const char *output, struct plan_doc *d, struct buf *err)
{
	struct verify v = { .r = r, .output = output, .why = err, .ret = EXIT_FAIL };
	struct buf forced = BUF_INIT;
	enum plan_status st;
	size_t which = 0;
	int ok;

	buf_init(&v.variant, 0);
	buf_init(&v.err, 0);
	buf_addf(&forced, "%s.forced", tmp);
	unlink(forced.buf);
	st = plan_run_once(r, &r->env_plain, NULL, &v.base, &v.err);
	if (st != PLAN_RUN_OK) {
		plan_failure_message(err, "verify: the run without the plan failed", st, &v.base, &v.err);
		v.ret = plan_exit_for(st);
		goto out;
	}
	/* The run with the plan also lists what it forced (load_forced). */
	strvec_setenv(&r->env_apply, "COLDSTART_PLAN_FORCED_OUT", forced.buf);
	ok = try_plan(r, tmp, &v.base, &which, &v.err, &st);
	strvec_unsetenv(&r->env_apply, "COLDSTART_PLAN_FORCED_OUT");
	if (ok < 0) {
		v.ret = plan_exit_for(st);
	} else if (ok) {
		printf("coldstart plan: verified: %zu response%s identical with and without the plan\n",
		       v.base.nr_responses, v.base.nr_responses == 1 ? "" : "s");
		v.ret = EXIT_OK;
		load_forced(&v, tmp, forced.buf, d);
	} else {
		show_diff(&v.base, which);
		find_causes(&v, tmp, d);
	}
out:
	unlink(forced.buf);
	buf_adds(&forced, ".lock");
	unlink(forced.buf);
	buf_release(&forced);
	if (v.variant.len)
		unlink(v.variant.buf);
	plan_outcome_release(&v.base);
	free(v.names);
	free(v.froms);
	if (v.d.root)
		json_decref(v.d.root);
	buf_release(&v.err);
	buf_release(&v.variant);
	return v.ret;
}
