/*
 * Resource limits applied to a local run: a cgroup per run on cgroup v2 or
 * v1, with its figures (CPU, throttling, peak memory, OOM kills) and a
 * removal that works on every path.  The limits themselves are runlimits.c's.
 */
#include "cgroup.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

/* How long destroy waits for processes to die and for rmdir to succeed. */
#define KILL_WAIT_MS 3000
#define RMDIR_WAIT_MS 1000
#define WHAT_TO_DO "run coldstart as root, delegate a cgroup v2 subtree to your user, or pass --no-limits"

enum v1_ctl { V1_CPU, V1_CPUACCT, V1_MEMORY, V1_PIDS, V1_CPUSET, V1__COUNT };
static const char *const v1_names[V1__COUNT] = { "cpu", "cpuacct", "memory", "pids", "cpuset" };

struct cgroup {
	int version; /* 1 or 2 */
	bool fake; /* under $COLDSTART_CGROUP_ROOT: a plain directory tree */
	char *name; /* coldstart-<pid>-<n> */
	char *dir; /* v2: the run's directory */
	char *v1_dir[V1__COUNT]; /* v1: one directory per controller, or NULL */
	struct strvec joins; /* <dir>/cgroup.procs for each directory */
	struct buf note; /* what could not be applied but does not matter */
};

/*
 * Where cgroups can be made: the cgroup2 candidates (our own cgroup, then
 * its parent) and, per v1 controller, our own cgroup then the hierarchy root.
 */
struct cg_places {
	bool fake;
	struct strvec v2; /* candidate parent directories */
	struct strvec v1[V1__COUNT];
};

static unsigned run_counter;

static void places_init(struct cg_places *pl)
{
	size_t i;

	pl->fake = false;
	strvec_init(&pl->v2);
	for (i = 0; i < V1__COUNT; i++)
		strvec_init(&pl->v1[i]);
}

static void places_release(struct cg_places *pl)
{
	size_t i;

	strvec_clear(&pl->v2);
	for (i = 0; i < V1__COUNT; i++)
		strvec_clear(&pl->v1[i]);
}

static bool path_exists(const char *path)
{
	struct stat st;

	return !stat(path, &st);
}

static bool file_in(const char *dir, const char *file)
{
	struct buf p = BUF_INIT;
	bool ok;

	buf_addf(&p, "%s/%s", dir, file);
	ok = path_exists(p.buf);
	buf_release(&p);
	return ok;
}

/* Reads a small file (cgroupfs or /proc) into sb; -1 with errno set. */
static int read_small(const char *path, struct buf *sb)
{
	char chunk[4096];
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	buf_reset(sb);
	if (fd < 0)
		return -1;
	while ((n = read(fd, chunk, sizeof(chunk))) != 0) {
		if (n < 0) {
			int e = errno;

			if (e == EINTR)
				continue;
			close(fd);
			errno = e;
			return -1;
		}
		buf_add(sb, chunk, (size_t)n);
	}
	close(fd);
	return 0;
}

static void trim(struct buf *sb)
{
	size_t n = sb->len;

	while (n && isspace((unsigned char)sb->buf[n - 1]))
		n--;
	buf_setlen(sb, n);
}

static int read_in(const char *dir, const char *file, struct buf *sb)
{
	struct buf p = BUF_INIT;
	int ret;

	buf_addf(&p, "%s/%s", dir, file);
	ret = read_small(p.buf, sb);
	buf_release(&p);
	return ret;
}

/*
 * Writes value into dir/file.  A fake tree is a plain directory, so the file
 * is created there; on a real cgroupfs a missing file means a missing
 * controller and must fail.
 */
static int write_in(bool fake, const char *dir, const char *file, const char *value,
		    struct buf *err)
{
	struct buf p = BUF_INIT;
	int flags = O_WRONLY | O_CLOEXEC | (fake ? O_CREAT | O_TRUNC : 0);
	size_t len = strlen(value);
	ssize_t n = -1;
	int fd = -1;
	int ret = -1;

	buf_addf(&p, "%s/%s", dir, file);
	fd = open(p.buf, flags, 0644);
	if (fd >= 0) {
		do
			n = write(fd, value, len);
		while (n < 0 && errno == EINTR);
		if (n >= 0 && (size_t)n != len)
			errno = EIO;
	}
	if (fd < 0 || n < 0 || (size_t)n != len) {
		if (err)
			buf_addf(err, "cannot write '%s' to '%s': %s", value, p.buf, strerror(errno));
		goto out;
	}
	ret = 0;
out:
	if (fd >= 0)
		close(fd);
	buf_release(&p);
	return ret;
}

/* Finds "key <number>" in a flat-keyed file such as cpu.stat. */
static int64_t keyed_value(const char *text, const char *key)
{
	size_t klen = strlen(key);
	const char *line = text;

	while (line && *line) {
		if (!strncmp(line, key, klen) && line[klen] == ' ') {
			char *end;
			long long v;

			errno = 0;
			v = strtoll(line + klen + 1, &end, 10);
			if (!errno && end != line + klen + 1 && v >= 0)
				return v;
			return UNKNOWN;
		}
		line = strchr(line, '\n');
		if (line)
			line++;
	}
	return UNKNOWN;
}

static int64_t keyed_in(const char *dir, const char *file, const char *key)
{
	struct buf sb = BUF_INIT;
	int64_t v = UNKNOWN;

	if (dir && !read_in(dir, file, &sb))
		v = keyed_value(sb.buf, key);
	buf_release(&sb);
	return v;
}

/* Reads a file holding one number ("max" and junk give UNKNOWN). */
static int64_t number_in(const char *dir, const char *file)
{
	struct buf sb = BUF_INIT;
	int64_t v = UNKNOWN;
	char *end;
	long long n;

	if (dir && !read_in(dir, file, &sb) && isdigit((unsigned char)sb.buf[0])) {
		errno = 0;
		n = strtoll(sb.buf, &end, 10);
		if (!errno && (*end == '\n' || !*end))
			v = n;
	}
	buf_release(&sb);
	return v;
}

static int64_t div_known(int64_t v, int64_t d)
{
	return v == UNKNOWN ? UNKNOWN : v / d;
}

/* True when the space-separated list has word. */
static bool has_word(const char *list, const char *word)
{
	size_t wl = strlen(word);
	const char *p = list;

	while (*p) {
		while (*p && isspace((unsigned char)*p))
			p++;
		if (!strncmp(p, word, wl) && (!p[wl] || isspace((unsigned char)p[wl])))
			return true;
		while (*p && !isspace((unsigned char)*p))
			p++;
	}
	return false;
}

static void push_unique(struct strvec *sv, const char *path)
{
	size_t i;

	for (i = 0; i < sv->nr; i++)
		if (!strcmp(sv->v[i], path))
			return;
	strvec_push(sv, path);
}

/*
 * Joins a mount point and a cgroup path; the mount's own root (field 4 of
 * mountinfo, not "/" inside some containers) is taken off the path first.
 */
static void join_mount(struct buf *out, const char *mnt, const char *mroot, const char *cgpath)
{
	size_t rl = strlen(mroot);

	buf_reset(out);
	buf_adds(out, mnt);
	if (strcmp(mroot, "/") && !strncmp(cgpath, mroot, rl) &&
	    (cgpath[rl] == '/' || !cgpath[rl]))
		cgpath += rl;
	if (strcmp(cgpath, "/"))
		buf_adds(out, cgpath);
}

/* Our path in the hierarchy that has controller ctl ("" for cgroup2). */
static char *own_cgroup(const char *cgroup_file, const char *ctl)
{
	const char *line = cgroup_file;
	char *found = NULL;

	while (line && *line && !found) {
		const char *c1 = strchr(line, ':');
		const char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
		const char *nl = strchr(line, '\n');
		size_t end = nl ? (size_t)(nl - line) : strlen(line);

		if (c2 && (size_t)(c2 - line) < end) {
			struct buf ctls = BUF_INIT;

			buf_add(&ctls, c1 + 1, (size_t)(c2 - c1 - 1));
			for (char *p = ctls.buf; *p; p++)
				if (*p == ',')
					*p = ' ';
			if ((!*ctl && !ctls.len && !strncmp(line, "0:", 2)) ||
			    (*ctl && has_word(ctls.buf, ctl)))
				found = xstrndup(c2 + 1, end - (size_t)(c2 + 1 - line));
			buf_release(&ctls);
		}
		line = nl ? nl + 1 : NULL;
	}
	return found;
}

/* Adds path and its parent (when not above the mount) as v2 candidates. */
static void add_v2_candidates(struct cg_places *pl, const char *mnt, const char *path)
{
	char *parent;
	char *slash;

	push_unique(&pl->v2, path);
	parent = xstrdup(path);
	slash = strrchr(parent, '/');
	if (slash && slash > parent && strlen(parent) > strlen(mnt)) {
		*slash = '\0';
		push_unique(&pl->v2, parent);
	}
	free(parent);
}

/*
 * Finds the cgroup mounts in /proc/self/mountinfo, or the fake tree under
 * $COLDSTART_CGROUP_ROOT: a cgroup2 tree when ROOT/cgroup.controllers
 * exists, else a v1 layout of ROOT/<controller>/ directories.
 */
static void places_find(struct cg_places *pl)
{
	const char *fake = getenv("COLDSTART_CGROUP_ROOT");
	struct buf mi = BUF_INIT, cgf = BUF_INIT, path = BUF_INIT;
	const char *line;
	size_t i;

	if (fake && *fake) {
		pl->fake = true;
		if (file_in(fake, "cgroup.controllers")) {
			strvec_push(&pl->v2, fake);
			goto out;
		}
		for (i = 0; i < V1__COUNT; i++) {
			buf_reset(&path);
			buf_addf(&path, "%s/%s", fake, v1_names[i]);
			if (file_in(path.buf, "cgroup.procs"))
				strvec_push(&pl->v1[i], path.buf);
		}
		goto out;
	}
	if (read_small("/proc/self/mountinfo", &mi) || read_small("/proc/self/cgroup", &cgf))
		goto out;
	for (line = mi.buf; line && *line; line = strchr(line, '\n'), line = line ? line + 1 : NULL) {
		struct strvec f = STRVEC_INIT;
		const char *nl = strchr(line, '\n');
		char *copy = xstrndup(line, nl ? (size_t)(nl - line) : strlen(line));
		char *p = copy;
		size_t sep = 0;

		/*
		 * Fields are space-separated; a mount point with a space would
		 * read as \040, which cgroup mounts do not use.
		 */
		while (*p) {
			char *e = strchr(p, ' ');

			if (e)
				*e = '\0';
			strvec_push(&f, p);
			if (!strcmp(p, "-") && !sep)
				sep = f.nr - 1;
			if (!e)
				break;
			p = e + 1;
		}
		if (sep && f.nr >= sep + 4 && f.nr > 5) {
			const char *fstype = f.v[sep + 1];
			const char *mroot = f.v[3], *mnt = f.v[4];

			if (!strcmp(fstype, "cgroup2")) {
				char *own = own_cgroup(cgf.buf, "");

				if (own) {
					join_mount(&path, mnt, mroot, own);
					add_v2_candidates(pl, mnt, path.buf);
					free(own);
				}
			} else if (!strcmp(fstype, "cgroup")) {
				struct buf opts = BUF_INIT;

				buf_adds(&opts, f.v[sep + 3]);
				for (char *q = opts.buf; *q; q++)
					if (*q == ',')
						*q = ' ';
				for (i = 0; i < V1__COUNT; i++) {
					char *own;

					if (!has_word(opts.buf, v1_names[i]))
						continue;
					own = own_cgroup(cgf.buf, v1_names[i]);
					if (own) {
						join_mount(&path, mnt, mroot, own);
						push_unique(&pl->v1[i], path.buf);
						free(own);
					}
					push_unique(&pl->v1[i], mnt);
				}
				buf_release(&opts);
			}
		}
		strvec_clear(&f);
		free(copy);
	}
out:
	buf_release(&mi);
	buf_release(&cgf);
	buf_release(&path);
}

static bool wants_v1(const struct limits *lim, enum v1_ctl c)
{
	switch (c) {
	case V1_CPU: return lim->cpus > 0;
	case V1_MEMORY: return lim->memory > 0;
	case V1_PIDS: return lim->pids > 0;
	case V1_CPUSET: return lim->cpuset != NULL;
	default: return false;
	}
}

/* Controllers a v2 cgroup needs for lim; memory always, for OOM detection. */
static void v2_needed(const struct limits *lim, struct strvec *need)
{
	if (lim->cpus > 0)
		strvec_push(need, "cpu");
	strvec_push(need, "memory");
	if (lim->pids > 0)
		strvec_push(need, "pids");
	if (lim->cpuset)
		strvec_push(need, "cpuset");
}

/* True when every controller in need is listed in base/cgroup.controllers. */
static bool v2_has_controllers(const char *base, const struct strvec *need, struct buf *why)
{
	struct buf sb = BUF_INIT, missing = BUF_INIT;
	bool ok = true;
	size_t i;

	if (read_in(base, "cgroup.controllers", &sb)) {
		if (why)
			buf_addf(why, "cannot read '%s/cgroup.controllers': %s", base, strerror(errno));
		ok = false;
		goto out;
	}
	trim(&sb);
	for (i = 0; i < need->nr; i++) {
		if (has_word(sb.buf, need->v[i]))
			continue;
		buf_addf(&missing, "%s'%s'", missing.len ? ", " : "", need->v[i]);
		ok = false;
	}
	if (!ok && why)
		buf_addf(why, "cgroup v2 at '%s' does not offer the %s controller%s (it offers: %s)",
			 base, missing.buf, strchr(missing.buf, ',') ? "s" : "",
			 sb.len ? sb.buf : "none");
out:
	buf_release(&sb);
	buf_release(&missing);
	return ok;
}

/*
 * The kernel gives a new cgroup its cgroup.procs; a fake tree gets an empty
 * one so that a child can "join" it and coldstart runs end to end.
 */
static void fake_procs(bool fake, const char *dir)
{
	if (fake)
		write_in(true, dir, "cgroup.procs", "", NULL);
}

/*
 * Makes base/name for a v2 run after enabling the needed controllers in
 * base/cgroup.subtree_control.  Returns the new directory or NULL with the
 * reason appended to why.
 */
static char *v2_make(const char *base, const char *name, const struct strvec *need, bool fake,
		     struct buf *why)
{
	struct buf sb = BUF_INIT, cmd = BUF_INIT, dir = BUF_INIT;
	char *ret = NULL;
	size_t i;

	if (!v2_has_controllers(base, need, why))
		goto out;
	if (read_in(base, "cgroup.subtree_control", &sb)) {
		buf_addf(why, "cannot read '%s/cgroup.subtree_control': %s", base, strerror(errno));
		goto out;
	}
	for (i = 0; i < need->nr; i++) {
		if (has_word(sb.buf, need->v[i]))
			continue;
		buf_reset(&cmd);
		buf_addf(&cmd, "+%s", need->v[i]);
		/* EBUSY here: base holds processes, so it cannot delegate. */
		if (write_in(fake, base, "cgroup.subtree_control", cmd.buf, why))
			goto out;
		if (fake) {
			buf_addch(&sb, ' ');
			buf_adds(&sb, need->v[i]);
			if (write_in(fake, base, "cgroup.subtree_control", sb.buf, why))
				goto out;
		}
	}
	buf_addf(&dir, "%s/%s", base, name);
	if (mkdir(dir.buf, 0755)) {
		buf_addf(why, "cannot create '%s': %s", dir.buf, strerror(errno));
		goto out;
	}
	fake_procs(fake, dir.buf);
	ret = buf_detach(&dir, NULL);
out:
	buf_release(&sb);
	buf_release(&cmd);
	buf_release(&dir);
	return ret;
}

static void swap_note(struct cgroup *cg, const char *file)
{
	struct buf sb = BUF_INIT;
	bool host_swap = false;

	/* /proc/swaps has a header line, then one line per swap area. */
	if (!read_small("/proc/swaps", &sb)) {
		char *nl = strchr(sb.buf, '\n');

		host_swap = nl && nl[1];
	}
	buf_addf(&cg->note, "no swap limit could be set ('%s' is missing: swap accounting is off); %s",
		 file, host_swap ? "this host has swap, so a run may swap beyond --memory instead of being OOM-killed"
				 : "this host has no swap, so runs cannot swap anyway");
	buf_release(&sb);
}

static int v2_apply(struct cgroup *cg, const struct limits *lim, struct buf *err)
{
	struct buf v = BUF_INIT;
	int ret = -1;

	if (lim->cpus > 0) {
		buf_addf(&v, "%lld %d", (long long)limits_cpu_quota_us(lim), LIMITS_CPU_PERIOD_US);
		if (write_in(cg->fake, cg->dir, "cpu.max", v.buf, err))
			goto out;
	}
	if (lim->memory > 0) {
		buf_reset(&v);
		buf_add_i64(&v, lim->memory);
		if (write_in(cg->fake, cg->dir, "memory.max", v.buf, err))
			goto out;
		buf_reset(&v);
		if (lim->swap < 0)
			buf_adds(&v, "max");
		else
			buf_add_i64(&v, lim->swap);
		if (!cg->fake && !file_in(cg->dir, "memory.swap.max")) {
			if (lim->swap >= 0)
				swap_note(cg, "memory.swap.max");
		} else if (write_in(cg->fake, cg->dir, "memory.swap.max", v.buf, err)) {
			goto out;
		}
	}
	if (lim->pids > 0) {
		buf_reset(&v);
		buf_addf(&v, "%ld", lim->pids);
		if (write_in(cg->fake, cg->dir, "pids.max", v.buf, err))
			goto out;
	}
	if (lim->cpuset && write_in(cg->fake, cg->dir, "cpuset.cpus", lim->cpuset, err))
		goto out;
	ret = 0;
out:
	buf_release(&v);
	return ret;
}

static int v2_create(struct cgroup *cg, const struct cg_places *pl, const struct limits *lim,
		     struct buf *why)
{
	struct strvec need = STRVEC_INIT;
	struct buf p = BUF_INIT;
	size_t i;
	int ret = -1;

	v2_needed(lim, &need);
	for (i = 0; i < pl->v2.nr && !cg->dir; i++) {
		if (why->len)
			buf_adds(why, "; ");
		cg->dir = v2_make(pl->v2.v[i], cg->name, &need, cg->fake, why);
	}
	if (!cg->dir)
		goto out;
	buf_addf(&p, "%s/cgroup.procs", cg->dir);
	strvec_push(&cg->joins, p.buf);
	buf_reset(why);
	if (v2_apply(cg, lim, why))
		goto out;
	ret = 0;
out:
	strvec_clear(&need);
	buf_release(&p);
	return ret;
}

/* cpuset.mems of the parent: a v1 cpuset cannot take tasks while empty. */
static void v1_parent_mems(const char *base, struct buf *out)
{
	buf_reset(out);
	if (read_in(base, "cpuset.mems", out) || (trim(out), !out->len)) {
		if (read_in(base, "cpuset.effective_mems", out) || (trim(out), !out->len)) {
			buf_reset(out);
			buf_adds(out, "0");
		}
	}
}

static int v1_apply(struct cgroup *cg, const struct limits *lim, const char *const *base,
		    struct buf *err)
{
	struct buf v = BUF_INIT;
	const char *d;
	int ret = -1;

	if ((d = cg->v1_dir[V1_CPU]) && lim->cpus > 0) {
		buf_addf(&v, "%d", LIMITS_CPU_PERIOD_US);
		if (write_in(cg->fake, d, "cpu.cfs_period_us", v.buf, err))
			goto out;
		buf_reset(&v);
		buf_addf(&v, "%lld", (long long)limits_cpu_quota_us(lim));
		if (write_in(cg->fake, d, "cpu.cfs_quota_us", v.buf, err))
			goto out;
	}
	if ((d = cg->v1_dir[V1_MEMORY]) && lim->memory > 0) {
		buf_reset(&v);
		buf_add_i64(&v, lim->memory);
		if (write_in(cg->fake, d, "memory.limit_in_bytes", v.buf, err))
			goto out;
		/*
		 * memsw counts memory plus swap, so memory + swap; with no
		 * memsw file (swap accounting off) no swap limit exists.
		 */
		if (lim->swap >= 0) {
			if (!file_in(base[V1_MEMORY], "memory.memsw.limit_in_bytes")) {
				swap_note(cg, "memory.memsw.limit_in_bytes");
			} else {
				buf_reset(&v);
				buf_add_i64(&v, lim->memory + lim->swap);
				if (write_in(cg->fake, d, "memory.memsw.limit_in_bytes", v.buf, err))
					goto out;
			}
		}
	}
	if ((d = cg->v1_dir[V1_PIDS]) && lim->pids > 0) {
		buf_reset(&v);
		buf_addf(&v, "%ld", lim->pids);
		if (write_in(cg->fake, d, "pids.max", v.buf, err))
			goto out;
	}
	if ((d = cg->v1_dir[V1_CPUSET]) && lim->cpuset) {
		if (write_in(cg->fake, d, "cpuset.cpus", lim->cpuset, err))
			goto out;
		v1_parent_mems(base[V1_CPUSET], &v);
		if (write_in(cg->fake, d, "cpuset.mems", v.buf, err))
			goto out;
	}
	ret = 0;
out:
	buf_release(&v);
	return ret;
}

/* Index of the controller whose run directory is path (a co-mount), or -1. */
static int same_dir(const struct cgroup *cg, const char *path)
{
	struct stat a, b;
	int c;

	if (stat(path, &a))
		return -1;
	for (c = 0; c < V1__COUNT; c++)
		if (cg->v1_dir[c] && !stat(cg->v1_dir[c], &b) && a.st_dev == b.st_dev &&
		    a.st_ino == b.st_ino)
			return c;
	return -1;
}

/*
 * Makes the run's directory in every v1 hierarchy it needs (the limited
 * ones) or can use for figures (cpu, cpuacct, memory), trying our own
 * cgroup first and the hierarchy root second.
 */
static int v1_create(struct cgroup *cg, const struct cg_places *pl, const struct limits *lim,
		     struct buf *why)
{
	const char *base[V1__COUNT] = { NULL };
	struct buf dir = BUF_INIT, p = BUF_INIT;
	bool any = false;
	int ret = -1;
	size_t c, i;

	for (c = 0; c < V1__COUNT; c++) {
		bool need = wants_v1(lim, (enum v1_ctl)c);
		bool is_alias = false;
		struct buf tried = BUF_INIT;
		int shared;

		if (!need && c != V1_CPU && c != V1_CPUACCT && c != V1_MEMORY)
			continue;
		for (i = 0; i < pl->v1[c].nr && !cg->v1_dir[c]; i++) {
			buf_reset(&dir);
			buf_addf(&dir, "%s/%s", pl->v1[c].v[i], cg->name);
			if (!mkdir(dir.buf, 0755)) {
				fake_procs(cg->fake, dir.buf);
				cg->v1_dir[c] = buf_detach(&dir, NULL);
				base[c] = pl->v1[c].v[i];
			} else if (errno == EEXIST && (shared = same_dir(cg, dir.buf)) >= 0) {
				/* Co-mounted with an earlier one (cpu,cpuacct): one directory. */
				cg->v1_dir[c] = buf_detach(&dir, NULL);
				base[c] = base[shared];
				is_alias = true;
			} else {
				buf_addf(&tried, "%scannot create '%s': %s", tried.len ? "; " : "",
					 dir.buf, strerror(errno));
			}
		}
		if (!cg->v1_dir[c] && need) {
			if (why->len)
				buf_adds(why, "; ");
			if (!pl->v1[c].nr)
				buf_addf(why, "the cgroup v1 '%s' controller is not mounted", v1_names[c]);
			else
				buf_add(why, tried.buf, tried.len);
			buf_release(&tried);
			goto out;
		}
		buf_release(&tried);
		if (cg->v1_dir[c] && !is_alias) {
			any = true;
			buf_reset(&p);
			buf_addf(&p, "%s/cgroup.procs", cg->v1_dir[c]);
			strvec_push(&cg->joins, p.buf);
		}
	}
	if (!any) {
		if (why->len)
			buf_adds(why, "; ");
		buf_adds(why, "no cgroup v1 hierarchy could be used");
		goto out;
	}
	buf_reset(why);
	if (v1_apply(cg, lim, base, why))
		goto out;
	ret = 0;
out:
	buf_release(&dir);
	buf_release(&p);
	return ret;
}

/* The directories of cg, in a fixed order. */
static size_t cg_dirs(const struct cgroup *cg, const char **dirs)
{
	size_t n = 0, c;

	if (cg->dir)
		dirs[n++] = cg->dir;
	for (c = 0; c < V1__COUNT; c++)
		if (cg->v1_dir[c])
			dirs[n++] = cg->v1_dir[c];
	return n;
}

/* Appends the pids in dir/cgroup.procs; -1 when it cannot be read. */
static int read_procs(const char *dir, bool fake, pid_t **pids, size_t *nr, size_t *alloc)
{
	struct buf sb = BUF_INIT;
	char *p, *end;

	if (read_in(dir, "cgroup.procs", &sb)) {
		int e = errno;

		buf_release(&sb);
		/* A fake tree has no cgroup.procs until a test writes one. */
		return fake && e == ENOENT ? 0 : -1;
	}
	for (p = sb.buf; *p; p = end) {
		long v;

		errno = 0;
		v = strtol(p, &end, 10);
		if (end == p) {
			end = p + 1;
			continue;
		}
		if (!errno && v > 0) {
			ALLOC_GROW(*pids, *nr + 1, *alloc);
			(*pids)[(*nr)++] = (pid_t)v;
		}
	}
	buf_release(&sb);
	return 0;
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/*
 * One pass: SIGKILLs every process listed in cg's directories.  Returns how
 * many were listed.  A fake tree's pids are fiction and never signalled;
 * neither are we, nor init.
 */
static long kill_pass(struct cgroup *cg)
{
	const char *dirs[V1__COUNT + 1];
	size_t nd = cg_dirs(cg, dirs), i, nr = 0, alloc = 0;
	pid_t *pids = NULL;

	for (i = 0; i < nd; i++)
		read_procs(dirs[i], cg->fake, &pids, &nr, &alloc);
	for (i = 0; i < nr && !cg->fake; i++)
		if (pids[i] > 1 && pids[i] != getpid())
			kill(pids[i], SIGKILL);
	free(pids);
	return (long)nr;
}

static void remove_fake_files(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	struct buf p = BUF_INIT;

	if (!d)
		return;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		buf_reset(&p);
		buf_addf(&p, "%s/%s", dir, de->d_name);
		unlink(p.buf);
	}
	closedir(d);
	buf_release(&p);
}

/*
 * Removes one run directory.  rmdir says EBUSY while a dying process is
 * still accounted, so it is retried for a bounded time, killing again.
 */
static int remove_dir(struct cgroup *cg, const char *dir)
{
	int64_t deadline = now_ns() + (int64_t)RMDIR_WAIT_MS * 1000000;

	for (;;) {
		if (!rmdir(dir) || errno == ENOENT)
			return 0;
		if (cg->fake && (errno == ENOTEMPTY || errno == EEXIST)) {
			remove_fake_files(dir);
			if (!rmdir(dir))
				return 0;
			return -1;
		}
		if (errno != EBUSY || now_ns() > deadline)
			return -1;
		kill_pass(cg);
		sleep_ms(10);
	}
}

/* Realtime start of a process in seconds, -1 when unknown. */
static double proc_start_time(pid_t pid)
{
	struct buf sb = BUF_INIT, path = BUF_INIT;
	double ret = -1;
	long long btime = -1;
	const char *p;
	int field;

	buf_addf(&path, "/proc/%ld/stat", (long)pid);
	if (read_small(path.buf, &sb) || !(p = strrchr(sb.buf, ')')))
		goto out;
	/* After "pid (comm)", field 3 is the state; starttime is field 22. */
	for (field = 2; field < 22 && p; field++) {
		p = strchr(p + 1, ' ');
	}
	if (!p)
		goto out;
	{
		unsigned long long ticks = strtoull(p + 1, NULL, 10);
		long hz = sysconf(_SC_CLK_TCK);

		if (read_small("/proc/stat", &sb))
			goto out;
		btime = keyed_value(sb.buf, "btime");
		if (btime < 0 || hz <= 0)
			goto out;
		ret = (double)btime + (double)ticks / (double)hz;
	}
out:
	buf_release(&sb);
	buf_release(&path);
	return ret;
}

/*
 * Whether the coldstart that made a cgroup named after pid still runs: the
 * pid lives and its process started no later than the directory was made
 * (a later start means the pid was reused after coldstart was SIGKILLed).
 */
static bool owner_alive(pid_t pid, const struct stat *st)
{
	double start;

	if (pid == getpid())
		return true;
	if (kill(pid, 0) && errno == ESRCH)
		return false;
	start = proc_start_time(pid);
	if (start < 0)
		return true;
	/* btime has a one-second grain, so allow two. */
	return start <= (double)st->st_ctim.tv_sec + 2.0;
}

/* Parses "coldstart-<pid>-<n>"; 0 when name is not one of ours. */
static pid_t parse_run_name(const char *name)
{
	const char *p;
	char *end;
	long pid;

	if (!starts_with(name, "coldstart-"))
		return 0;
	p = name + strlen("coldstart-");
	if (!isdigit((unsigned char)*p))
		return 0;
	errno = 0;
	pid = strtol(p, &end, 10);
	if (errno || *end != '-' || pid <= 0 || !isdigit((unsigned char)end[1]))
		return 0;
	for (p = end + 1; *p; p++)
		if (!isdigit((unsigned char)*p))
			return 0;
	return (pid_t)pid;
}

/*
 * A new handle; name NULL means the next coldstart-<our pid>-<n>.  Nothing
 * is created on disk yet.
 */
static struct cgroup *cg_new(bool fake, int version, const char *name)
{
	struct cgroup *cg = xcalloc(1, sizeof(*cg));

	cg->version = version;
	cg->fake = fake;
	if (name) {
		cg->name = xstrdup(name);
	} else {
		struct buf b = BUF_INIT;

		buf_addf(&b, "coldstart-%ld-%u", (long)getpid(), run_counter++);
		cg->name = buf_detach(&b, NULL);
	}
	strvec_init(&cg->joins);
	buf_init(&cg->note, 0);
	return cg;
}

static void cleanup_base(const char *base, int version, bool fake)
{
	DIR *d = opendir(base);
	struct dirent *de;
	struct buf p = BUF_INIT;

	if (!d)
		return;
	while ((de = readdir(d))) {
		struct stat st;
		pid_t pid = parse_run_name(de->d_name);
		struct cgroup *cg;

		if (!pid)
			continue;
		buf_reset(&p);
		buf_addf(&p, "%s/%s", base, de->d_name);
		if (stat(p.buf, &st) || !S_ISDIR(st.st_mode) || owner_alive(pid, &st))
			continue;
		cg = cg_new(fake, version, de->d_name);
		if (version == 2)
			cg->dir = buf_detach(&p, NULL);
		else
			cg->v1_dir[V1_CPU] = buf_detach(&p, NULL);
		cgroup_destroy(cg);
	}
	closedir(d);
	buf_release(&p);
}

struct cgroup *cgroup_create(struct limits *lim, struct buf *err)
{
	struct cg_places pl;
	struct cgroup *cg = NULL;
	struct buf why2 = BUF_INIT, why1 = BUF_INIT;
	struct strvec need = STRVEC_INIT;
	bool v2_ok = false, v1_any = false;
	size_t i;

	places_init(&pl);
	if (limits_check(lim, err))
		goto out;
	places_find(&pl);
	v2_needed(lim, &need);
	for (i = 0; i < pl.v2.nr; i++)
		v2_ok = v2_ok || v2_has_controllers(pl.v2.v[i], &need, NULL);
	for (i = 0; i < V1__COUNT; i++)
		v1_any = v1_any || pl.v1[i].nr;

	/* v2 when its controllers are there; v1 otherwise, or when v2 fails. */
	if (v2_ok) {
		cg = cg_new(pl.fake, 2, NULL);
		if (v2_create(cg, &pl, lim, &why2)) {
			cgroup_destroy(cg);
			cg = NULL;
		}
	} else if (pl.v2.nr) {
		v2_has_controllers(pl.v2.v[0], &need, &why2);
	}
	if (!cg && v1_any) {
		cg = cg_new(pl.fake, 1, NULL);
		if (v1_create(cg, &pl, lim, &why1)) {
			cgroup_destroy(cg);
			cg = NULL;
		}
	}
	if (cg) {
		limits_set_backend(lim, cg->version == 2 ? "cgroup-v2" : "cgroup-v1");
		goto out;
	}
	buf_adds(err, "cannot apply resource limits: ");
	if (!pl.v2.nr && !v1_any && pl.fake)
		buf_addf(err, "$COLDSTART_CGROUP_ROOT '%s' holds neither a cgroup2 tree (cgroup.controllers) "
			 "nor v1 hierarchies (<controller>/cgroup.procs)", getenv("COLDSTART_CGROUP_ROOT"));
	else if (!pl.v2.nr && !v1_any)
		buf_adds(err, "no cgroup filesystem is mounted");
	buf_add(err, why2.buf, why2.len);
	if (why1.len)
		buf_addf(err, "%s%s", why2.len ? "; " : "", why1.buf);
	buf_adds(err, "; " WHAT_TO_DO);
out:
	places_release(&pl);
	strvec_clear(&need);
	buf_release(&why1);
	buf_release(&why2);
	return cg;
}

const char *const *cgroup_join_files(const struct cgroup *cg)
{
	return (const char *const *)cg->joins.v;
}

const char *cgroup_note(const struct cgroup *cg)
{
	return cg && cg->note.len ? cg->note.buf : NULL;
}

int cgroup_read_figures(struct cgroup *cg, struct cg_figures *out)
{
	const char *cpu, *mem;

	out->has = true;
	out->cpu_usage_us = out->nr_periods = out->nr_throttled = UNKNOWN;
	out->throttled_us = out->memory_peak = out->oom_kills = UNKNOWN;
	if (!cg)
		return -1;
	if (cg->version == 2) {
		out->cpu_usage_us = keyed_in(cg->dir, "cpu.stat", "usage_usec");
		out->nr_periods = keyed_in(cg->dir, "cpu.stat", "nr_periods");
		out->nr_throttled = keyed_in(cg->dir, "cpu.stat", "nr_throttled");
		out->throttled_us = keyed_in(cg->dir, "cpu.stat", "throttled_usec");
		out->memory_peak = number_in(cg->dir, "memory.peak");
		out->oom_kills = keyed_in(cg->dir, "memory.events", "oom_kill");
	} else {
		cpu = cg->v1_dir[V1_CPU];
		mem = cg->v1_dir[V1_MEMORY];
		out->cpu_usage_us = div_known(number_in(cg->v1_dir[V1_CPUACCT], "cpuacct.usage"), 1000);
		out->nr_periods = keyed_in(cpu, "cpu.stat", "nr_periods");
		out->nr_throttled = keyed_in(cpu, "cpu.stat", "nr_throttled");
		out->throttled_us = div_known(keyed_in(cpu, "cpu.stat", "throttled_time"), 1000);
		out->memory_peak = number_in(mem, "memory.max_usage_in_bytes");
		out->oom_kills = keyed_in(mem, "memory.oom_control", "oom_kill");
	}
	if (out->cpu_usage_us == UNKNOWN && out->nr_periods == UNKNOWN &&
	    out->memory_peak == UNKNOWN && out->oom_kills == UNKNOWN)
		return -1;
	return 0;
}

int cgroup_nr_procs(struct cgroup *cg)
{
	const char *dirs[V1__COUNT + 1];
	size_t nd = cg_dirs(cg, dirs), i;
	size_t most = 0;
	int readable = 0;

	/* A v1 process is listed once per hierarchy: count the fullest. */
	for (i = 0; i < nd; i++) {
		size_t nr = 0, alloc = 0;
		pid_t *pids = NULL;

		if (!read_procs(dirs[i], cg->fake, &pids, &nr, &alloc)) {
			readable++;
			if (nr > most)
				most = nr;
		}
		free(pids);
	}
	return readable ? (int)most : -1;
}

int cgroup_kill_all(struct cgroup *cg)
{
	int64_t deadline = now_ns() + (int64_t)KILL_WAIT_MS * 1000000;

	if (!cg)
		return 0;
	/* cgroup.kill (Linux 5.14) also catches processes forking meanwhile. */
	if (cg->dir && !cg->fake && file_in(cg->dir, "cgroup.kill"))
		write_in(false, cg->dir, "cgroup.kill", "1", NULL);
	for (;;) {
		if (!kill_pass(cg))
			return 0;
		if (cg->fake || now_ns() > deadline)
			return -1;
		sleep_ms(5);
	}
}

void cgroup_destroy(struct cgroup *cg)
{
	const char *dirs[V1__COUNT + 1];
	size_t nd, i;

	if (!cg)
		return;
	cgroup_kill_all(cg);
	nd = cg_dirs(cg, dirs);
	for (i = 0; i < nd; i++)
		remove_dir(cg, dirs[i]);
	free(cg->name);
	free(cg->dir);
	for (i = 0; i < V1__COUNT; i++)
		free(cg->v1_dir[i]);
	strvec_clear(&cg->joins);
	buf_release(&cg->note);
	free(cg);
}

void cgroup_cleanup_stale(void)
{
	struct cg_places pl;
	size_t i, c;

	places_init(&pl);
	places_find(&pl);
	for (i = 0; i < pl.v2.nr; i++)
		cleanup_base(pl.v2.v[i], 2, pl.fake);
	for (c = 0; c < V1__COUNT; c++)
		for (i = 0; i < pl.v1[c].nr; i++)
			cleanup_base(pl.v1[c].v[i], 1, pl.fake);
	places_release(&pl);
}

const char *cgroup_backend_name(void)
{
	struct cg_places pl;
	struct limits lim = { .cpus = 1, .memory = 1 };
	struct strvec need = STRVEC_INIT;
	const char *ret = NULL;
	size_t i;

	places_init(&pl);
	places_find(&pl);
	v2_needed(&lim, &need);
	for (i = 0; i < pl.v2.nr && !ret; i++)
		if (v2_has_controllers(pl.v2.v[i], &need, NULL))
			ret = "cgroup-v2";
	if (!ret && pl.v1[V1_CPU].nr && pl.v1[V1_MEMORY].nr)
		ret = "cgroup-v1";
	strvec_clear(&need);
	places_release(&pl);
	return ret;
}
