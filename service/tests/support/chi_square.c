/* chi_square.c: see chi_square.h. */
#include "chi_square.h"

#include <criterion/criterion.h>

/* The chi-square of n counts, count[0], count[stride], ..., count[(n - 1) *
 * stride], against their sum spread evenly over the n (a row of a table
 * with stride 1, a column with stride n). */
static double uniform(const int *count, int n, int stride)
{
    double total = 0, chi2 = 0;
    for (int i = 0; i < n; i++)
        total += count[i * stride];
    double expected = total / n;
    for (int i = 0; i < n; i++) {
        double d = count[i * stride] - expected;
        chi2 += d * d / expected;
    }
    return chi2;
}

void chi_square_assert_uniform_places(int rounds, chi_square_shuffle *shuffle)
{
    enum { N = 10 }; /* CHI2_9_P001's degrees of freedom, plus one */
    int count[N][N] = {{0}};
    for (int r = 0; r < rounds; r++) {
        int place[N];
        shuffle(r, N, place);
        for (int u = 0; u < N; u++) {
            cr_assert(place[u] >= 1 && place[u] <= N, "shuffle %d: place %d", r, place[u]);
            count[u][place[u] - 1]++;
        }
    }
    for (int u = 0; u < N; u++) {
        double by_entrant = uniform(&count[u][0], N, 1);
        double by_place = uniform(&count[0][0] + u, N, N);
        cr_assert_lt(by_entrant, CHI2_9_P001, "entrant %d: chi-square %.2f", u + 1, by_entrant);
        cr_assert_lt(by_place, CHI2_9_P001, "place %d: chi-square %.2f", u + 1, by_place);
    }
}
