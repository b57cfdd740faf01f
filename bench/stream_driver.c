/*
 * Drives the shared-stderr attribution (src/ingest/trace_stream.h) over a
 * generated run: a master and WORKERS forked workers that each import the
 * same MODULES modules, their trace files complete in DIR and their rows
 * interleaved in DIR/stderr, as a preforking server's workers print them.
 *
 *	stream_driver gen DIR WORKERS MODULES    writes the run
 *	stream_driver run DIR                    feeds DIR/stderr in 4 KiB chunks, ends, collects
 *
 * `run` prints each process (pid, role, nodes, their summed cumulative
 * time), the passthrough's length and the warnings: the same run must print
 * the same lines before and after a change to the stream.  Built as
 * parse_bench.sh builds its driver, with the whole library but main.c:
 *
 *	cc -std=c11 -D_GNU_SOURCE -DCOLDSTART_VERSION='"bench"' -O2 -Isrc -o build/bench/stream_driver \
 *		bench/stream_driver.c $(find src -name '*.c' ! -name main.c | sort) -ljansson -lelf -lz -lm -pthread
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ingest/trace_stream.h"

#define HEADER "import time: self [us] | cumulative | imported package\n"

static void write_text(const char *dir, const char *name, const struct buf *text)
{
	struct buf path = BUF_INIT;
	FILE *f;

	buf_addf(&path, "%s/%s", dir, name);
	f = fopen(path.buf, "w");
	if (!f || fwrite(text->buf, 1, text->len, f) != text->len || fclose(f)) {
		perror(path.buf);
		exit(1);
	}
	buf_release(&path);
}

/* Each worker's import j takes a duration of its own, so a row fits one worker best. */
static long duration_us(long worker, long j)
{
	return 200 + (j % 50) * 10 + worker * 3;
}

static int gen(const char *dir, long workers, long modules)
{
	struct buf tr = BUF_INIT, err = BUF_INIT, name = BUF_INIT;
	long w, j, t;

	if (mkdir(dir, 0700)) {
		perror(dir);
		return 1;
	}
	buf_adds(&tr, "#coldstart-trace 2\n"
		      "H\t1000000\t100\t1\t900000\tc\t3.11.2\taudit\texec\t5000\t0\n"
		      "V\t1000000\tpython3\tapp.py\n"
		      "N\t1000100\t1\tmodules\tsys\\nencodings\\ncodecs\\nsite\n");
	buf_adds(&err, HEADER "import time:       100 |        100 | encodings\n"
			      "import time:        50 |         50 | codecs\n"
			      "import time:       200 |        350 | site\n");
	for (j = 0, t = 2000000; j < modules; j++, t += 1000000) {
		buf_addf(&tr, "S\t%ld\t1\t%ld\t10\tapp%ld\n", t, t, j);
		buf_addf(&tr, "E\t%ld\t1\t%ld\t12\tapp%ld\n", t + duration_us(0, j) * 1000, t + 1, j);
		buf_addf(&err, "import time: %9ld | %10ld | app%ld\n", duration_us(0, j), duration_us(0, j), j);
	}
	write_text(dir, "100-0.trace", &tr);
	for (w = 1; w <= workers; w++) {
		buf_reset(&tr);
		buf_addf(&tr, "#coldstart-trace 2\nH\t%ld\t%ld\t100\t%ld\tc\t3.11.2\taudit\tfork\t10\t0\n", t, 1000 + w,
			 t);
		for (j = 0; j < modules; j++) {
			long s = t + 1000 + j * 1000000;

			buf_addf(&tr, "S\t%ld\t1\t%ld\t10\tlib%ld\n", s, s, j);
			buf_addf(&tr, "E\t%ld\t1\t%ld\t12\tlib%ld\n", s + duration_us(w, j) * 1000, s + 1, j);
		}
		buf_reset(&name);
		buf_addf(&name, "%ld-0.trace", 1000 + w);
		write_text(dir, name.buf, &tr);
	}
	for (j = 0; j < modules; j++)
		for (w = 1; w <= workers; w++)
			buf_addf(&err, "import time: %9ld | %10ld | lib%ld\n", duration_us(w, j), duration_us(w, j), j);
	buf_adds(&err, "the app's own line\n");
	write_text(dir, "stderr", &err);
	buf_release(&tr);
	buf_release(&err);
	buf_release(&name);
	return 0;
}

static int run_stream(const char *dir)
{
	struct buf path = BUF_INIT, err = BUF_INIT, pass = BUF_INIT;
	struct trace_stream *ts;
	struct profile p;
	struct run *run;
	size_t off, i;

	buf_addf(&path, "%s/stderr", dir);
	if (buf_read_file(&err, path.buf) < 0) {
		perror(path.buf);
		return 1;
	}
	ts = trace_stream_new(dir);
	for (off = 0; off < err.len; off += 4096)
		trace_stream_feed(ts, err.buf + off, err.len - off < 4096 ? err.len - off : 4096, &pass);
	trace_stream_end(ts, &pass);
	profile_init(&p);
	run = profile_add_run(&p);
	trace_stream_collect(ts, &p, run);
	for (i = 0; i < run->nr_procs; i++) {
		const struct proc *pr = &run->procs[i];
		int64_t sum = 0;
		size_t k;

		for (k = 0; k < pr->nr_nodes; k++)
			sum += pr->nodes[k].cum_us;
		printf("%ld %s %zu %lld\n", pr->pid, pr->role ? pr->role : "-", pr->nr_nodes, (long long)sum);
	}
	printf("rows %zu passthrough %zu warnings %zu\n", trace_stream_nr_rows(ts), pass.len, p.nr_warnings);
	trace_stream_free(ts);
	profile_release(&p);
	buf_release(&pass);
	buf_release(&err);
	buf_release(&path);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 5 && !strcmp(argv[1], "gen"))
		return gen(argv[2], atol(argv[3]), atol(argv[4]));
	if (argc == 3 && !strcmp(argv[1], "run"))
		return run_stream(argv[2]);
	fprintf(stderr, "usage: stream_driver gen DIR WORKERS MODULES | run DIR\n");
	return 2;
}
