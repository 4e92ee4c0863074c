/* unit_registry.c: the pure part of the registry of queues (registry.c):
 * ids sorted, each once. */
#include <criterion/criterion.h>

#include "registry.h"

Test(registry, ids_are_sorted_and_each_kept_once)
{
    int64_t ids[] = {42, 7, 1099511627776, 42, 7, 3, 42};
    size_t n = registry_sort_unique(ids, sizeof(ids) / sizeof(ids[0]));
    cr_assert_eq(n, 4);
    const int64_t want[] = {3, 7, 42, 1099511627776};
    for (size_t i = 0; i < n; i++)
        cr_assert_eq(ids[i], want[i], "at %zu", i);
    cr_assert_eq(registry_sort_unique(ids, 0), 0, "nothing stays nothing");
}
