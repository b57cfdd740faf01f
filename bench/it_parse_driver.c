/*
 * Benchmark driver: the parser alone, reading a log file the way
 * `coldstart parse` does (it_feed_from: a lexing thread when there is more
 * than one CPU), and printing the counts.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ingest/importtime.h"

static long read_fd(void *ctx, char *buf, size_t len)
{
	return (long)read(*(int *)ctx, buf, len);
}

int main(int argc, char **argv)
{
	struct run run;
	struct it_parser *ps;
	size_t nodes = 0, i, nw;
	int fd;

	if (argc != 2) {
		fprintf(stderr, "usage: it_parse_driver LOG\n");
		return 2;
	}
	fd = open(argv[1], O_RDONLY);
	if (fd < 0) {
		fprintf(stderr, "cannot open '%s': %s\n", argv[1], strerror(errno));
		return 1;
	}
	memset(&run, 0, sizeof(run));
	ps = it_parser_new(&run);
	if (it_feed_from(ps, read_fd, &fd, NULL) < 0) {
		fprintf(stderr, "cannot read '%s': %s\n", argv[1], strerror(errno));
		return 1;
	}
	close(fd);
	it_finish(ps, NULL);
	for (i = 0; i < run.nr_procs; i++)
		nodes += run.procs[i].nr_nodes;
	it_warnings(ps, &nw);
	printf("rows %zu nodes %zu procs %zu warnings %zu\n", it_rows(ps), nodes, run.nr_procs, nw);
	it_parser_free(ps);
	run_release(&run);
	return 0;
}
