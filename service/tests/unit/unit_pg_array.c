/* unit_pg_array.c: a PostgreSQL array literal (pg_array.c): empty, one
 * element, many, the int64 extremes, NULL elements, text quoted only when
 * PostgreSQL would read it otherwise, and the room kept across a reset. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "pg_array.h"

Test(pg_array, an_empty_array_is_two_braces)
{
    pg_array a = {0};
    cr_assert_str_eq(pg_array_text(&a), "{}");
    pg_array_free(&a);
    char *s = pg_array_of_i64(NULL, 0, sizeof(int64_t));
    cr_assert_str_eq(s, "{}");
    free(s);
}

Test(pg_array, one_element_has_no_comma)
{
    pg_array a = {0};
    cr_assert_eq(pg_array_add_i64(&a, 42), 0);
    cr_assert_str_eq(pg_array_text(&a), "{42}");
    cr_assert_eq(a.n, 1);
    pg_array_free(&a);
}

Test(pg_array, many_elements_are_comma_separated_in_their_order)
{
    pg_array a = {0};
    for (int64_t i = 1; i <= 5; i++)
        cr_assert_eq(pg_array_add_i64(&a, i * 10), 0);
    cr_assert_str_eq(pg_array_text(&a), "{10,20,30,40,50}");
    pg_array_free(&a);
}

Test(pg_array, the_int64_extremes_are_written_whole)
{
    pg_array a = {0};
    pg_array_add_i64(&a, INT64_MIN);
    pg_array_add_i64(&a, INT64_MAX);
    pg_array_add_i64(&a, 0);
    cr_assert_str_eq(pg_array_text(&a), "{-9223372036854775808,9223372036854775807,0}");
    pg_array_free(&a);
}

Test(pg_array, a_long_literal_grows_past_its_first_room)
{
    pg_array a = {0};
    for (int i = 0; i < 10000; i++)
        cr_assert_eq(pg_array_add_i64(&a, INT64_MAX), 0);
    const char *t = pg_array_text(&a);
    cr_assert_eq(strlen(t), 2 + 10000 * 19 + 9999);
    cr_assert_eq(t[0], '{');
    cr_assert_eq(t[strlen(t) - 1], '}');
    pg_array_free(&a);
}

Test(pg_array, null_elements_are_sql_null_and_plain_text_goes_bare)
{
    pg_array a = {0};
    pg_array_add_null(&a);
    pg_array_add_i64(&a, 7);
    pg_array_add_text(&a, "won");
    pg_array_add_text(&a, "0a1b2c");
    pg_array_add_null(&a);
    cr_assert_str_eq(pg_array_text(&a), "{NULL,7,won,0a1b2c,NULL}");
    pg_array_free(&a);
}

Test(pg_array, text_postgresql_would_misread_is_quoted_and_escaped)
{
    pg_array a = {0};
    pg_array_add_text(&a, "");
    pg_array_add_text(&a, "null");
    pg_array_add_text(&a, "a,b");
    pg_array_add_text(&a, "say \"hi\"");
    pg_array_add_text(&a, "back\\slash");
    pg_array_add_text(&a, "{x}");
    cr_assert_str_eq(pg_array_text(&a),
                     "{\"\",\"null\",\"a,b\",\"say \\\"hi\\\"\",\"back\\\\slash\",\"{x}\"}");
    pg_array_free(&a);
}

Test(pg_array, a_reset_empties_the_literal_and_keeps_its_room)
{
    pg_array a = {0};
    pg_array_add_i64(&a, 1);
    pg_array_add_i64(&a, 2);
    size_t cap = a.cap;
    pg_array_reset(&a);
    cr_assert_str_eq(pg_array_text(&a), "{}");
    pg_array_add_i64(&a, 3);
    cr_assert_str_eq(pg_array_text(&a), "{3}");
    cr_assert_eq(a.cap, cap);
    pg_array_free(&a);
}

Test(pg_array, a_column_of_structs_is_read_by_its_stride)
{
    struct pair {
        int64_t id, other;
    } v[] = {{1, -1}, {2, -2}, {INT64_MAX, 0}};
    char *ids = pg_array_of_i64(&v[0].id, 3, sizeof(v[0]));
    char *others = pg_array_of_i64(&v[0].other, 3, sizeof(v[0]));
    cr_assert_str_eq(ids, "{1,2,9223372036854775807}");
    cr_assert_str_eq(others, "{-1,-2,0}");
    free(ids);
    free(others);
}
