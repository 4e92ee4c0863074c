/* chi_square.h: Pearson's chi-square against a uniform expectation, for the
 * tests that a shuffle (the room's places, the draw's positions) is fair. */
#ifndef SECKILL_CHI_SQUARE_H
#define SECKILL_CHI_SQUARE_H

/* chi-square of 9 degrees of freedom whose upper tail is 0.001. */
#define CHI2_9_P001 27.877

/* The chi-square of n counts, count[0], count[stride], ..., count[(n - 1) *
 * stride], against their sum spread evenly over the n (a row of a table
 * with stride 1, a column with stride n). */
double chi_square_uniform(const int *count, int n, int stride);

#endif
