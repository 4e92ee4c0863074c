/* chi_square.c: see chi_square.h. */
#include "chi_square.h"

double chi_square_uniform(const int *count, int n, int stride)
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
