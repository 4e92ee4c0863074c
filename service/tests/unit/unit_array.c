/* unit_array.c: a growing array's room (array.c): doubling from the first
 * capacity, the entries kept, and a size too large refused with the array
 * left as it was. */
#include <stdint.h>
#include <stdlib.h>

#include <criterion/criterion.h>

#include "array.h"

Test(array, an_empty_array_gets_its_first_capacity)
{
    size_t cap = 0;
    int64_t *a = array_grow(NULL, &cap, 1, sizeof(*a), 16);
    cr_assert_not_null(a);
    cr_assert_eq(cap, 16);
    a[15] = 7; /* the whole capacity is there (ASan would say otherwise) */
    free(a);
}

Test(array, room_already_there_returns_the_same_array)
{
    size_t cap = 0;
    int64_t *a = array_grow(NULL, &cap, 4, sizeof(*a), 8);
    cr_assert_not_null(a);
    int64_t *same = array_grow(a, &cap, 8, sizeof(*a), 8);
    cr_assert_eq(same, a);
    cr_assert_eq(cap, 8);
    free(a);
}

Test(array, growth_doubles_until_the_need_fits_and_keeps_the_entries)
{
    size_t cap = 0;
    int64_t *a = array_grow(NULL, &cap, 1, sizeof(*a), 8);
    cr_assert_not_null(a);
    for (int i = 0; i < 8; i++)
        a[i] = i;
    a = array_grow(a, &cap, 9, sizeof(*a), 8);
    cr_assert_not_null(a);
    cr_assert_eq(cap, 16, "one doubling");
    a = array_grow(a, &cap, 100, sizeof(*a), 8);
    cr_assert_not_null(a);
    cr_assert_eq(cap, 128, "doubled until 100 fit: 32, 64, 128");
    for (int i = 0; i < 8; i++)
        cr_assert_eq(a[i], i, "entry %d kept", i);
    free(a);
}

Test(array, a_size_that_overflows_is_refused_and_the_array_left_as_it_was)
{
    size_t cap = 0;
    char *body = array_grow(NULL, &cap, 5, 1, 256);
    cr_assert_not_null(body);
    cr_assert_eq(cap, 256);
    body[0] = 'x';
    cr_assert_null(array_grow(body, &cap, SIZE_MAX, 1, 256), "no capacity doubles to SIZE_MAX");
    cr_assert_null(array_grow(body, &cap, SIZE_MAX / 4, 64, 256), "entries * size overflows");
    cr_assert_eq(cap, 256, "capacity unchanged");
    cr_assert_eq(body[0], 'x', "the array still ours");
    free(body);
}
