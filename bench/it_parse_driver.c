/*
 * Benchmark driver: feeds a log file to the importtime parser in 256 KiB
 * chunks, as `coldstart profile` does with a pipe, and prints the counts.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "importtime.h"

int main(int argc, char **argv)
{
	static char chunk[1 << 18];
	struct run run;
	struct it_parser *ps;
	size_t n, nodes = 0, i, nw;
	FILE *f;

	if (argc != 2) {
		fprintf(stderr, "usage: it_parse_driver LOG\n");
		return 2;
	}
	f = fopen(argv[1], "rb");
	if (!f) {
		fprintf(stderr, "cannot open '%s': %s\n", argv[1], strerror(errno));
		return 1;
	}
	memset(&run, 0, sizeof(run));
	ps = it_parser_new(&run);
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
		it_feed(ps, chunk, n, NULL);
	fclose(f);
	it_finish(ps, NULL);
	for (i = 0; i < run.nr_procs; i++)
		nodes += run.procs[i].nr_nodes;
	it_warnings(ps, &nw);
	printf("rows %zu nodes %zu procs %zu warnings %zu\n", it_rows(ps), nodes, run.nr_procs, nw);
	it_parser_free(ps);
	run_release(&run);
	return 0;
}
