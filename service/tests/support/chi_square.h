/* chi_square.h: Pearson's chi-square against a uniform expectation, for the
 * tests that a shuffle (the room's places, the draw's positions) is fair. */
#ifndef SECKILL_CHI_SQUARE_H
#define SECKILL_CHI_SQUARE_H

/* chi-square of 9 degrees of freedom whose upper tail is 0.001. */
#define CHI2_9_P001 27.877

/* One shuffle of the fixed list: place[u] (1..n) of each of the n entrants
 * in shuffle number r of the seed list. */
typedef void chi_square_shuffle(int r, int n, int *place);

/* Runs shuffles 0..rounds-1 of 10 entrants and asserts that each entrant
 * lands in every place, and each place gets every entrant, uniformly:
 * chi-square below CHI2_9_P001 (p > 0.001) for every row and column. */
void chi_square_assert_uniform_places(int rounds, chi_square_shuffle *shuffle);

#endif
