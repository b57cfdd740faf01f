/*
 * Reads one samples file of the start-up sampler into struct samples_file
 * (samples.h; the format is docs/trace-format.md, "Samples").  Never prints.
 */
#include "model/samples.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define MAX_FIELDS 300

/* Unescapes \\ \t \n \r \xHH in place; returns the new length. */
static size_t unescape(char *s)
{
	char *r, *w;

	for (r = w = s; *r; r++) {
		if (*r != '\\' || !r[1]) {
			*w++ = *r;
			continue;
		}
		r++;
		if (*r == 't') {
			*w++ = '\t';
		} else if (*r == 'n') {
			*w++ = '\n';
		} else if (*r == 'r') {
			*w++ = '\r';
		} else if (*r == 'x' && r[1] && r[2]) {
			char hex[3] = { r[1], r[2], '\0' };
			long c = strtol(hex, NULL, 16);

			*w++ = c > 0 ? (char)c : '?';
			r += 2;
		} else {
			*w++ = *r;
		}
	}
	*w = '\0';
	return (size_t)(w - s);
}

/* Splits at TABs in place (no unescaping: sample fields are numbers). */
static size_t split(char *line, char **f, size_t max)
{
	size_t nr = 0;
	char *p = line;

	while (nr < max) {
		char *tab = strchr(p, '\t');

		f[nr++] = p;
		if (!tab)
			break;
		*tab = '\0';
		p = tab + 1;
	}
	return nr;
}

/*
 * Names are Python strings, so UTF-8; what is not (a damaged file) becomes
 * '?', as do control bytes, so every name can be written as JSON.
 */
static size_t clean_utf8(char *s, size_t len)
{
	unsigned char *p = (unsigned char *)s;
	size_t i = 0;

	while (i < len) {
		size_t n = utf8_seq_len(p + i, len - i);

		if (!n || (n == 1 && (p[i] < 0x20 || p[i] == 0x7f))) {
			p[i] = '?';
			n = 1;
		}
		i += n;
	}
	return len;
}

static uint32_t intern(struct samples_file *sf, char *s)
{
	size_t len = clean_utf8(s, unescape(s));
	size_t off = sf->pool.len;

	if (!len)
		return 0;
	if (off + len + 1 > UINT32_MAX)
		return 0;
	buf_add(&sf->pool, s, len + 1);
	return (uint32_t)off;
}

static int on_code(struct samples_file *sf, char **f, size_t nf)
{
	int64_t id, line;
	struct sf_code *c;

	/* The sampler numbers code objects 1, 2, ...: an id far beyond the last is not one of its records. */
	if (nf < 6 || parse_i64(f[2], &id) < 0 || parse_i64(f[5], &line) < 0 || id <= 0 ||
	    (size_t)id > sf->nr_codes + 4096)
		return -1;
	if ((size_t)id >= sf->nr_codes) {
		ALLOC_GROW(sf->codes, (size_t)id + 1, sf->alloc_codes);
		memset(sf->codes + sf->nr_codes, 0, ((size_t)id + 1 - sf->nr_codes) * sizeof(*sf->codes));
		sf->nr_codes = (size_t)id + 1;
	}
	c = &sf->codes[id];
	c->name = intern(sf, f[3]);
	c->file = intern(sf, f[4]);
	c->line = (int32_t)line;
	return 0;
}

static int on_sample(struct samples_file *sf, char **f, size_t nf)
{
	int64_t t, thread, cpu, wait, id;
	struct sf_sample *s;
	size_t i;

	if (nf < 5 || parse_i64(f[1], &t) < 0 || parse_i64(f[2], &thread) < 0 || parse_i64(f[3], &cpu) < 0 ||
	    parse_i64(f[4], &wait) < 0 || thread <= 0 || thread > SAMPLES_MAX_THREAD)
		return -1;
	ALLOC_GROW(sf->samples, sf->nr_samples + 1, sf->alloc_samples);
	s = &sf->samples[sf->nr_samples];
	s->t_ns = t;
	s->cpu_ns = cpu;
	s->wait_ns = wait >= 0 ? wait : UNKNOWN;
	s->thread = (int32_t)thread;
	s->first = (uint32_t)sf->nr_frames;
	s->nr = 0;
	s->truncated = false;
	for (i = 5; i < nf; i++) {
		struct sf_frame *fr;
		char *colon;

		if (!strcmp(f[i], "...")) {
			s->truncated = true;
			break;
		}
		colon = strchr(f[i], ':');
		if (colon)
			*colon = '\0';
		if (parse_i64(f[i], &id) < 0 || id < 0) {
			sf->nr_frames = s->first;
			return -1;
		}
		ALLOC_GROW(sf->frames, sf->nr_frames + 1, sf->alloc_frames);
		fr = &sf->frames[sf->nr_frames++];
		/* An id the file never defined (a C record lost with a full mapping) is "?". */
		fr->code = (size_t)id < sf->nr_codes ? (uint32_t)id : 0;
		fr->module = colon ? intern(sf, colon + 1) : 0;
	}
	s->nr = (uint32_t)(sf->nr_frames - s->first);
	sf->nr_samples++;
	return 0;
}

static int on_record(struct samples_file *sf, char *line, bool *header)
{
	char *f[MAX_FIELDS];
	size_t nf = split(line, f, MAX_FIELDS);
	int64_t v[7];

	if (!*header)
		return -1;
	if (strlen(f[0]) != 1)
		return -1;
	switch (f[0][0]) {
	case 'H':
		if (nf < 8 || parse_i64(f[1], &v[0]) < 0 || parse_i64(f[2], &v[1]) < 0 || parse_i64(f[3], &v[2]) < 0 ||
		    parse_i64(f[4], &v[3]) < 0 || parse_i64(f[5], &v[4]) < 0 || parse_i64(f[6], &v[5]) < 0)
			return -1;
		sf->start_ns = v[0];
		sf->pid = (long)v[1];
		sf->ppid = (long)v[2];
		sf->interval_us = v[3];
		sf->start_thread_cpu_ns = v[4];
		sf->start_proc_cpu_ns = v[5];
		unescape(f[7]);
		snprintf(sf->version, sizeof(sf->version), "%s", f[7]);
		sf->forked = nf > 8 && !strcmp(f[8], "fork");
		if (nf > 9 && parse_i64(f[9], &v[6]) == 0 && v[6] >= 0)
			sf->start_wait_ns = v[6];
		return 0;
	case 'C': return on_code(sf, f, nf);
	case 'S': return on_sample(sf, f, nf);
	case 'F':
		if (nf < 2 || parse_i64(f[1], &v[0]) < 0)
			return -1;
		sf->final_ns = v[0];
		return 0;
	case 'Q':
		if (nf < 5 || parse_i64(f[1], &v[0]) < 0 || parse_i64(f[2], &v[1]) < 0 || parse_i64(f[3], &v[2]) < 0 ||
		    parse_i64(f[4], &v[3]) < 0)
			return -1;
		sf->end_ns = v[0];
		sf->end_proc_cpu_ns = v[1];
		sf->dropped = (uint64_t)v[2];
		sf->faults = (uint64_t)v[3];
		return 0;
	default: return 0; /* unknown record types are for later versions */
	}
}

void samples_init(struct samples_file *sf)
{
	memset(sf, 0, sizeof(*sf));
	buf_init(&sf->pool, 4096);
	buf_addch(&sf->pool, '\0');
	sf->pid = sf->ppid = -1;
	sf->start_ns = sf->final_ns = sf->end_ns = sf->end_proc_cpu_ns = UNKNOWN;
	sf->interval_us = sf->start_thread_cpu_ns = sf->start_proc_cpu_ns = sf->start_wait_ns = UNKNOWN;
	ALLOC_GROW(sf->codes, 1, sf->alloc_codes);
	memset(sf->codes, 0, sizeof(*sf->codes));
	sf->nr_codes = 1;
}

int samples_parse(struct samples_file *sf, const char *text, size_t len, struct buf *err)
{
	static const char magic[] = "#coldstart-samples 1";
	const char *nul = memchr(text, '\0', len);
	const char *p = text, *end;
	struct buf line = BUF_INIT;
	bool header = false;

	if (nul)
		len = (size_t)(nul - text);
	end = text + len;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));

		if (!nl)
			break; /* a record being written when the process died */
		buf_reset(&line);
		buf_add(&line, p, (size_t)(nl - p));
		p = nl + 1;
		if (!header) {
			if (strcmp(line.buf, magic)) {
				buf_addf(err, "not a coldstart samples file (version 1)");
				buf_release(&line);
				return -1;
			}
			header = true;
			continue;
		}
		if (on_record(sf, line.buf, &header) < 0)
			sf->bad_records++;
	}
	buf_release(&line);
	if (!header || sf->start_ns == UNKNOWN) {
		buf_addf(err, "not a coldstart samples file (no header)");
		return -1;
	}
	return 0;
}

int samples_read_file(struct samples_file *sf, const char *path, struct buf *err)
{
	struct buf text = BUF_INIT;
	int ret;

	if (buf_read_file(&text, path) < 0) {
		buf_addf(err, "cannot read '%s': %s", path, strerror(errno));
		buf_release(&text);
		return -1;
	}
	ret = samples_parse(sf, text.buf, text.len, err);
	buf_release(&text);
	return ret;
}

void samples_release(struct samples_file *sf)
{
	free(sf->codes);
	free(sf->samples);
	free(sf->frames);
	buf_release(&sf->pool);
	memset(sf, 0, sizeof(*sf));
}
