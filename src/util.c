/*
 * Shared helpers: allocation, the string buffer, the string vector, error
 * reporting and a few parsers of human units.
 */
#include "util.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

char buf_empty[1];
const char *strvec_empty[1];

static void vreport(const char *prefix, const char *fmt, va_list ap)
{
	struct buf msg = BUF_INIT;

	buf_adds(&msg, "coldstart: ");
	buf_adds(&msg, prefix);
	buf_vaddf(&msg, fmt, ap);
	buf_addch(&msg, '\n');
	fwrite(msg.buf, 1, msg.len, stderr);
	fflush(stderr);
	buf_release(&msg);
}

_Noreturn void bug_fl(const char *file, int line, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "coldstart: BUG: %s:%d: ", file, line);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	abort();
}

static _Noreturn void oom(size_t size)
{
	fprintf(stderr, "coldstart: fatal: out of memory allocating %zu bytes\n", size);
	exit(1);
}

void *xmalloc(size_t size)
{
	void *p = malloc(size ? size : 1);

	if (!p)
		oom(size);
	return p;
}

void *xcalloc(size_t nmemb, size_t size)
{
	void *p = calloc(nmemb ? nmemb : 1, size ? size : 1);

	if (!p)
		oom(nmemb * size);
	return p;
}

void *xrealloc(void *ptr, size_t size)
{
	void *p = realloc(ptr, size ? size : 1);

	if (!p)
		oom(size);
	return p;
}

uint64_t hash_bytes(const void *data, size_t len)
{
	const unsigned char *p = data;
	uint64_t h = 1469598103934665603ULL;
	size_t i;

	for (i = 0; i < len; i++)
		h = (h ^ p[i]) * 1099511628211ULL;
	return h;
}

static void *big_map(size_t size)
{
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		oom(size);
	return p;
}

void *big_realloc(void *ptr, size_t old_size, size_t new_size)
{
	void *p;

	if (new_size < BIG_MIN) {
		if (old_size < BIG_MIN)
			return xrealloc(ptr, new_size);
		p = xmalloc(new_size);
		memcpy(p, ptr, new_size);
		munmap(ptr, old_size);
		return p;
	}
	if (old_size < BIG_MIN) {
		p = big_map(new_size);
		if (old_size)
			memcpy(p, ptr, old_size);
		free(ptr);
	} else {
		p = mremap(ptr, old_size, new_size, MREMAP_MAYMOVE);
		if (p == MAP_FAILED)
			oom(new_size);
	}
	/* Only advice: a kernel without transparent huge pages ignores it. */
	madvise(p, new_size, MADV_HUGEPAGE);
	return p;
}

void big_free(void *ptr, size_t size)
{
	if (size < BIG_MIN)
		free(ptr);
	else
		munmap(ptr, size);
}

char *xstrdup(const char *s)
{
	return xstrndup(s, strlen(s));
}

char *xstrndup(const char *s, size_t n)
{
	char *p = xmalloc(n + 1);

	memcpy(p, s, n);
	p[n] = '\0';
	return p;
}

size_t st_mult(size_t a, size_t b)
{
	if (b && a > SIZE_MAX / b)
		die("size overflow: %zu * %zu", a, b);
	return a * b;
}

void buf_init(struct buf *sb, size_t hint)
{
	sb->buf = buf_empty;
	sb->len = 0;
	sb->alloc = 0;
	if (hint)
		buf_grow(sb, hint);
}

void buf_release(struct buf *sb)
{
	if (sb->alloc)
		free(sb->buf);
	buf_init(sb, 0);
}

char *buf_detach(struct buf *sb, size_t *len)
{
	char *s;

	if (!sb->alloc)
		buf_grow(sb, 0);
	s = sb->buf;
	if (len)
		*len = sb->len;
	buf_init(sb, 0);
	return s;
}

void buf_grow(struct buf *sb, size_t extra)
{
	int fresh = !sb->alloc;

	if (extra > SIZE_MAX - sb->len - 1)
		die("string buffer too large");
	if (fresh)
		sb->buf = NULL;
	ALLOC_GROW(sb->buf, sb->len + extra + 1, sb->alloc);
	if (fresh)
		sb->buf[0] = '\0';
}

void buf_setlen(struct buf *sb, size_t len)
{
	if (len > (sb->alloc ? sb->alloc - 1 : 0))
		BUG("buf_setlen beyond allocation");
	sb->len = len;
	if (sb->alloc)
		sb->buf[len] = '\0';
}

void buf_add(struct buf *sb, const void *data, size_t len)
{
	buf_grow(sb, len);
	memcpy(sb->buf + sb->len, data, len);
	sb->len += len;
	sb->buf[sb->len] = '\0';
}

void buf_adds(struct buf *sb, const char *s)
{
	buf_add(sb, s, strlen(s));
}

void buf_addch(struct buf *sb, int c)
{
	buf_grow(sb, 1);
	sb->buf[sb->len++] = (char)c;
	sb->buf[sb->len] = '\0';
}

void buf_vaddf(struct buf *sb, const char *fmt, va_list ap)
{
	va_list cp;
	int n;

	buf_grow(sb, 64);
	va_copy(cp, ap);
	n = vsnprintf(sb->buf + sb->len, sb->alloc - sb->len, fmt, cp);
	va_end(cp);
	if (n < 0)
		BUG("vsnprintf failed");
	if ((size_t)n >= sb->alloc - sb->len) {
		buf_grow(sb, (size_t)n);
		n = vsnprintf(sb->buf + sb->len, sb->alloc - sb->len, fmt, ap);
	}
	sb->len += (size_t)n;
}

void buf_addf(struct buf *sb, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	buf_vaddf(sb, fmt, ap);
	va_end(ap);
}

void buf_add_last_line(struct buf *sb, const char *text)
{
	const char *end = text + strlen(text), *start;

	while (end > text && (end[-1] == '\n' || end[-1] == '\r' || end[-1] == ' ' || end[-1] == '\t'))
		end--;
	start = end;
	while (start > text && start[-1] != '\n')
		start--;
	while (start < end && (*start == ' ' || *start == '\t'))
		start++;
	buf_add(sb, start, (size_t)(end - start));
}

void buf_add_i64(struct buf *sb, int64_t v)
{
	buf_grow(sb, 24);
	buf_setlen(sb, (size_t)(put_i64(sb->buf + sb->len, v) - sb->buf));
}

size_t utf8_seq_len(const unsigned char *s, size_t n)
{
	size_t len, i;
	unsigned char lo = 0x80, hi = 0xbf;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		len = 2;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		len = 3;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		len = 4;
	else
		return 0;
	if (n < len)
		return 0;
	if (s[0] == 0xe0)
		lo = 0xa0;
	else if (s[0] == 0xed)
		hi = 0x9f;
	else if (s[0] == 0xf0)
		lo = 0x90;
	else if (s[0] == 0xf4)
		hi = 0x8f;
	if (s[1] < lo || s[1] > hi)
		return 0;
	for (i = 2; i < len; i++)
		if (s[i] < 0x80 || s[i] > 0xbf)
			return 0;
	return len;
}

size_t buf_add_json_str(struct buf *sb, const char *s, size_t len)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *u = (const unsigned char *)s;
	size_t i = 0, start = 0, escaped = 0;

	buf_grow(sb, len + 2);
	buf_addch(sb, '"');
	while (i < len) {
		unsigned char c = u[i];
		char esc[6];
		size_t seq;

		if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') {
			i++;
			continue;
		}
		if (c >= 0x80) {
			seq = utf8_seq_len(u + i, len - i);
			if (seq) {
				i += seq;
				continue;
			}
		}
		buf_add(sb, s + start, i - start);
		start = ++i;
		switch (c) {
		case '"': buf_add(sb, "\\\"", 2); break;
		case '\\': buf_add(sb, "\\\\", 2); break;
		case '\n': buf_add(sb, "\\n", 2); break;
		case '\r': buf_add(sb, "\\r", 2); break;
		case '\t': buf_add(sb, "\\t", 2); break;
		default:
			if (c >= 0x80) {
				/* \\xHH in the JSON text: the string holds a backslash, 'x' and two digits. */
				esc[0] = esc[1] = '\\';
				esc[2] = 'x';
				esc[3] = hex[c >> 4];
				esc[4] = hex[c & 15];
				buf_add(sb, esc, 5);
				escaped++;
				break;
			}
			esc[0] = '\\';
			esc[1] = 'u';
			esc[2] = '0';
			esc[3] = '0';
			esc[4] = hex[c >> 4];
			esc[5] = hex[c & 15];
			buf_add(sb, esc, 6);
		}
	}
	buf_add(sb, s + start, len - start);
	buf_addch(sb, '"');
	return escaped;
}

int buf_read_file(struct buf *sb, const char *path)
{
	gzFile gz;
	char chunk[65536];
	int n;

	gz = gzopen(path, "rb");
	if (!gz)
		return -1;
	while ((n = gzread(gz, chunk, sizeof(chunk))) > 0)
		buf_add(sb, chunk, (size_t)n);
	if (n < 0) {
		int zerr, saved = errno;

		gzerror(gz, &zerr);
		gzclose(gz);
		/* A read error keeps its errno (a directory: EISDIR); broken gzip data is EIO. */
		errno = zerr == Z_ERRNO ? saved : EIO;
		return -1;
	}
	gzclose(gz);
	return 0;
}

int gz_failure(struct gzFile_s *gz, int n, struct buf *err)
{
	int saved = errno, zerr;
	const char *msg = gzerror(gz, &zerr), *p;

	if (n > 0 || zerr == Z_OK)
		return 0;
	/* zlib says "PATH: what"; the caller names the file. */
	for (p = msg; (p = strstr(p, ": ")); msg = p += 2)
		;
	if (zerr == Z_ERRNO)
		buf_adds(err, strerror(saved));
	else if (zerr == Z_BUF_ERROR)
		buf_adds(err, "truncated gzip data (the file ends inside the compressed stream)");
	else if (zerr == Z_DATA_ERROR)
		buf_addf(err, "corrupt gzip data (%s)", msg);
	else
		buf_adds(err, msg);
	return 1;
}

int zfile_open(struct zfile *zf, const char *path, uint64_t limit, struct buf *err)
{
	memset(zf, 0, sizeof(*zf));
	zf->limit = limit;
	errno = 0;
	if (!strcmp(path, "-")) {
		int fd = dup(0);

		zf->gz = fd < 0 ? NULL : gzdopen(fd, "rb");
		if (!zf->gz && fd >= 0)
			close(fd);
	} else {
		zf->gz = gzopen(path, "rb");
	}
	if (!zf->gz) {
		buf_adds(err, strerror(errno ? errno : ENOMEM));
		return -1;
	}
	return 0;
}

long zfile_read(void *ctx, char *buf, size_t len, struct buf *err)
{
	struct zfile *zf = ctx;
	int n;

	if (len > INT_MAX)
		len = INT_MAX;
	/* One byte beyond the limit tells a file of exactly the limit from a longer one. */
	if (zf->limit - zf->total < len)
		len = (size_t)(zf->limit - zf->total) + 1;
	n = gzread(zf->gz, buf, (unsigned)len);
	if (n <= 0 && gz_failure(zf->gz, n, err))
		return -1;
	if ((uint64_t)n > zf->limit - zf->total) {
		struct buf size = BUF_INIT;

		zf->over_limit = 1;
		buf_add_bytes(&size, zf->limit > INT64_MAX ? INT64_MAX : (int64_t)zf->limit);
		buf_addf(err, "more than %s of text (after decompression), the limit", size.buf);
		buf_release(&size);
		return -1;
	}
	zf->total += (uint64_t)n;
	return n;
}

void zfile_close(struct zfile *zf)
{
	if (zf->gz)
		gzclose(zf->gz);
	zf->gz = NULL;
}

void strvec_init(struct strvec *sv)
{
	sv->v = strvec_empty;
	sv->nr = 0;
	sv->alloc = 0;
}

void strvec_push(struct strvec *sv, const char *s)
{
	if (sv->v == strvec_empty)
		sv->v = NULL;
	ALLOC_GROW(sv->v, sv->nr + 2, sv->alloc);
	sv->v[sv->nr++] = xstrdup(s);
	sv->v[sv->nr] = NULL;
}

void strvec_pushf(struct strvec *sv, const char *fmt, ...)
{
	struct buf sb = BUF_INIT;
	va_list ap;

	va_start(ap, fmt);
	buf_vaddf(&sb, fmt, ap);
	va_end(ap);
	strvec_push(sv, sb.buf);
	buf_release(&sb);
}

void strvec_pushv(struct strvec *sv, const char *const *v)
{
	for (; v && *v; v++)
		strvec_push(sv, *v);
}

void strvec_clear(struct strvec *sv)
{
	size_t i;

	if (sv->v != strvec_empty) {
		for (i = 0; i < sv->nr; i++)
			free((char *)sv->v[i]);
		free(sv->v);
	}
	strvec_init(sv);
}

void strvec_setenv(struct strvec *env, const char *name, const char *value)
{
	strvec_unsetenv(env, name);
	strvec_pushf(env, "%s=%s", name, value);
}

void strvec_unsetenv(struct strvec *env, const char *name)
{
	struct strvec out = STRVEC_INIT;
	size_t i, len = strlen(name);

	for (i = 0; i < env->nr; i++)
		if (strncmp(env->v[i], name, len) || env->v[i][len] != '=')
			strvec_push(&out, env->v[i]);
	strvec_clear(env);
	*env = out;
}

const char *strvec_getenv(const struct strvec *env, const char *name)
{
	size_t i, len = strlen(name);

	for (i = 0; i < env->nr; i++)
		if (!strncmp(env->v[i], name, len) && env->v[i][len] == '=')
			return env->v[i] + len + 1;
	return NULL;
}

int error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vreport("error: ", fmt, ap);
	va_end(ap);
	return -1;
}

int error_errno(const char *fmt, ...)
{
	struct buf msg = BUF_INIT;
	int saved = errno;
	va_list ap;

	va_start(ap, fmt);
	buf_vaddf(&msg, fmt, ap);
	va_end(ap);
	error("%s: %s", msg.buf, strerror(saved));
	buf_release(&msg);
	errno = saved;
	return -1;
}

void warning(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vreport("warning: ", fmt, ap);
	va_end(ap);
}

_Noreturn void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vreport("fatal: ", fmt, ap);
	va_end(ap);
	exit(1);
}

int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int starts_with(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

int ends_with(const char *s, const char *suffix)
{
	size_t ls = strlen(s), lx = strlen(suffix);

	return ls >= lx && !strcmp(s + ls - lx, suffix);
}

/*
 * The number that starts a size or a duration: not empty, no leading space
 * or sign, finite and not negative.  *end is where its unit starts.
 */
static int parse_amount(const char *s, double *v, char **end)
{
	errno = 0;
	if (!*s || isspace((unsigned char)*s) || *s == '-')
		return -1;
	*v = strtod(s, end);
	if (errno || *end == s || !isfinite(*v) || *v < 0)
		return -1;
	return 0;
}

int parse_size(const char *s, int64_t *out)
{
	char *end;
	double v;
	double mult = 1;

	if (parse_amount(s, &v, &end) < 0)
		return -1;
	switch (tolower((unsigned char)*end)) {
	case '\0': break;
	case 'b': end++; break;
	case 'k':
		mult = 1024.0;
		end++;
		break;
	case 'm':
		mult = 1024.0 * 1024;
		end++;
		break;
	case 'g':
		mult = 1024.0 * 1024 * 1024;
		end++;
		break;
	case 't':
		mult = 1024.0 * 1024 * 1024 * 1024;
		end++;
		break;
	default: return -1;
	}
	if (mult > 1 && (*end == 'b' || *end == 'B'))
		end++;
	if (mult > 1 && (*end == 'i' || *end == 'I') && (end[1] == 'b' || end[1] == 'B'))
		end += 2;
	if (*end)
		return -1;
	v *= mult;
	if (v > 9.0e18)
		return -1;
	*out = (int64_t)v;
	return 0;
}

int parse_duration_us(const char *s, int64_t *out)
{
	char *end;
	double v, mult = 1000.0;

	if (parse_amount(s, &v, &end) < 0)
		return -1;
	if (!*end || !strcmp(end, "ms"))
		mult = 1000.0;
	else if (!strcmp(end, "s"))
		mult = 1000000.0;
	else if (!strcmp(end, "us") || !strcmp(end, "\xc2\xb5s"))
		mult = 1.0;
	else if (!strcmp(end, "ns"))
		mult = 0.001;
	else
		return -1;
	v *= mult;
	if (v > 9.0e15)
		return -1;
	*out = (int64_t)llround(v);
	return 0;
}

void buf_add_duration(struct buf *sb, int64_t us)
{
	int64_t a = us < 0 ? -us : us;

	if (a < 1000)
		buf_addf(sb, "%lld us", (long long)us);
	else if (a < 1000000)
		buf_addf(sb, "%.1f ms", (double)us / 1000.0);
	else
		buf_addf(sb, "%.2f s", (double)us / 1000000.0);
}

void buf_add_bytes(struct buf *sb, int64_t bytes)
{
	double b = (double)bytes;
	int64_t a = bytes < 0 ? -bytes : bytes;

	if (a < 1024)
		buf_addf(sb, "%lld B", (long long)bytes);
	else if (a < 1024 * 1024)
		buf_addf(sb, "%.1f KiB", b / 1024.0);
	else if (a < 1024LL * 1024 * 1024)
		buf_addf(sb, "%.1f MiB", b / (1024.0 * 1024));
	else
		buf_addf(sb, "%.2f GiB", b / (1024.0 * 1024 * 1024));
}

int parse_i64(const char *s, int64_t *out)
{
	char *end;
	long long v;

	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno || end == s || *end)
		return -1;
	*out = v;
	return 0;
}

size_t name_distance(const char *name, const char *candidate)
{
	size_t n = strlen(name), m = strlen(candidate), i, j, d, limit;
	size_t *base, *prev2, *prev, *cur;

	if (n >= 2 && n < m && !strncmp(candidate, name, n))
		return 0;
	if (n > 64 || m > 64)
		return SIZE_MAX;
	limit = (n > m ? n : m) / 3;
	if (!limit)
		limit = 1;
	base = prev2 = xcalloc(3 * (m + 1), sizeof(*prev2));
	prev = prev2 + m + 1;
	cur = prev + m + 1;
	for (j = 0; j <= m; j++)
		prev[j] = j;
	for (i = 1; i <= n; i++) {
		size_t *t;

		cur[0] = i;
		for (j = 1; j <= m; j++) {
			size_t sub = prev[j - 1] + (name[i - 1] != candidate[j - 1]);

			d = prev[j] + 1 < cur[j - 1] + 1 ? prev[j] + 1 : cur[j - 1] + 1;
			d = sub < d ? sub : d;
			if (i > 1 && j > 1 && name[i - 1] == candidate[j - 2] && name[i - 2] == candidate[j - 1] &&
			    prev2[j - 2] + 1 < d)
				d = prev2[j - 2] + 1;
			cur[j] = d;
		}
		t = prev2;
		prev2 = prev;
		prev = cur;
		cur = t;
	}
	d = prev[m];
	free(base);
	return d <= limit ? d : SIZE_MAX;
}

char *find_program(const char *name)
{
	const char *path = getenv("PATH"), *s;
	struct buf b = BUF_INIT;

	if (strchr(name, '/'))
		return xstrdup(name);
	for (s = path ? path : "/usr/bin:/bin"; *s;) {
		size_t len = strcspn(s, ":");

		buf_reset(&b);
		buf_add(&b, s, len);
		buf_addf(&b, "/%s", name);
		if (!access(b.buf, X_OK))
			return buf_detach(&b, NULL);
		s += len + (s[len] == ':');
	}
	buf_release(&b);
	return NULL;
}
