/*
 * The statistics behind `coldstart compare`: the Mann-Whitney U test (exact
 * with ties, or normal), Holm's adjustment and outliers (see compare.h).
 */
#include "analysis/compare.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model/stats.h"
#include "util.h"

struct ranked {
	int64_t v;
	int from_a;
};

static int cmp_ranked(const void *x, const void *y)
{
	const struct ranked *a = x, *b = y;

	return a->v < b->v ? -1 : a->v > b->v;
}

/*
 * The exact two-sided p of the rank sum of the first sample: twice ranks
 * (integers, since a midrank is a whole or half number) are dealt into
 * subsets of size na, counted by sum with a knapsack over the pooled values.
 */
static void exact_p(const int *rank2, size_t n, size_t na, long observed, struct mw_result *out)
{
	long max_sum = 0, reach = 0, s, lo_tail_sum, hi_tail_sum;
	double *ways, total = 0, lo = 0, hi = 0, p_min_one;
	size_t i, k, width;

	for (i = 0; i < n; i++)
		max_sum += rank2[i];
	width = (size_t)max_sum + 1;
	ways = xcalloc((na + 1) * width, sizeof(*ways));
	ways[0] = 1;
	for (i = 0; i < n; i++) {
		reach += rank2[i];
		for (k = (i + 1 < na ? i + 1 : na); k >= 1; k--)
			for (s = reach; s >= rank2[i]; s--)
				ways[k * width + (size_t)s] += ways[(k - 1) * width + (size_t)(s - rank2[i])];
	}
	for (s = 0; s <= max_sum; s++) {
		double w = ways[na * width + (size_t)s];

		total += w;
		if (s <= observed)
			lo += w;
		if (s >= observed)
			hi += w;
	}
	out->p = fmin(1.0, 2.0 * fmin(lo, hi) / total);
	/* The most extreme arrangement, the na smallest ranks, is as likely as the largest. */
	lo_tail_sum = hi_tail_sum = -1;
	for (s = 0; s <= max_sum && lo_tail_sum < 0; s++)
		if (ways[na * width + (size_t)s] > 0)
			lo_tail_sum = s;
	for (s = max_sum; s >= 0 && hi_tail_sum < 0; s--)
		if (ways[na * width + (size_t)s] > 0)
			hi_tail_sum = s;
	p_min_one = fmin(ways[na * width + (size_t)lo_tail_sum], ways[na * width + (size_t)hi_tail_sum]) / total;
	out->p_min = fmin(1.0, 2.0 * p_min_one);
	out->exact = true;
	free(ways);
}

void mann_whitney(const int64_t *a, size_t na, const int64_t *b, size_t nb, struct mw_result *out)
{
	size_t n = na + nb, i, j;
	struct ranked *all = xmalloc(st_mult(n, sizeof(*all)));
	int *rank2 = xmalloc(st_mult(n, sizeof(*rank2)));
	long sum2 = 0;
	double tie_term = 0;

	memset(out, 0, sizeof(*out));
	for (i = 0; i < na; i++)
		all[i] = (struct ranked){ .v = a[i], .from_a = 1 };
	for (i = 0; i < nb; i++)
		all[na + i] = (struct ranked){ .v = b[i], .from_a = 0 };
	qsort(all, n, sizeof(*all), cmp_ranked);
	/* Midranks, doubled: ranks i+1 .. j share (i+1 + j). */
	for (i = 0; i < n; i = j) {
		double t;

		for (j = i; j < n && all[j].v == all[i].v; j++)
			;
		for (size_t k = i; k < j; k++)
			rank2[k] = (int)(i + 1 + j);
		t = (double)(j - i);
		tie_term += t * t * t - t;
	}
	for (i = 0; i < n; i++)
		if (all[i].from_a)
			sum2 += rank2[i];
	out->u = (double)sum2 / 2.0 - (double)na * (double)(na + 1) / 2.0;
	if (n <= COMPARE_EXACT_MAX) {
		int *pool = xmalloc(st_mult(n, sizeof(*pool)));

		memcpy(pool, rank2, n * sizeof(*pool));
		exact_p(pool, n, na, sum2, out);
		free(pool);
	} else {
		double mu = (double)na * (double)nb / 2.0;
		double var = (double)na * (double)nb / 12.0 *
			     ((double)(n + 1) - tie_term / ((double)n * (double)(n - 1)));
		double z = var > 0 ? (fabs(out->u - mu) - 0.5) / sqrt(var) : 0;

		out->p = var > 0 ? fmin(1.0, erfc(fmax(z, 0) / sqrt(2.0))) : 1.0;
		out->p_min = 0;
	}
	free(all);
	free(rank2);
}

struct indexed_p {
	double p;
	size_t i;
};

static int cmp_indexed(const void *x, const void *y)
{
	const struct indexed_p *a = x, *b = y;

	return a->p < b->p ? -1 : a->p > b->p ? 1 : a->i < b->i ? -1 : a->i > b->i;
}

void holm_adjust(double *p, size_t nr)
{
	struct indexed_p *order = xmalloc(st_mult(nr ? nr : 1, sizeof(*order)));
	double run = 0;
	size_t i;

	for (i = 0; i < nr; i++)
		order[i] = (struct indexed_p){ .p = p[i], .i = i };
	qsort(order, nr, sizeof(*order), cmp_indexed);
	/* The k-th smallest (from 0) is multiplied by nr - k, and never falls below the one before. */
	for (i = 0; i < nr; i++) {
		run = fmax(run, fmin(1.0, (double)(nr - i) * order[i].p));
		p[order[i].i] = run;
	}
	free(order);
}

size_t mark_outliers(const int64_t *v, size_t nr, bool *outlier)
{
	int64_t *copy = xmalloc(st_mult(nr ? nr : 1, sizeof(*copy)));
	struct summary s;
	size_t i, count = 0;

	memcpy(copy, v, nr * sizeof(*copy));
	summarize(copy, nr, &s);
	free(copy);
	for (i = 0; i < nr; i++) {
		outlier[i] = s.n > 2 && s.mad > 0 && v[i] != UNKNOWN &&
			     0.6745 * fabs((double)(v[i] - s.median)) / (double)s.mad > COMPARE_OUTLIER_Z;
		count += outlier[i];
	}
	return count;
}
