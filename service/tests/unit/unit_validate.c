/* unit_validate.c: the strict number parsing of validate.c, at its edges. */
#include <stdint.h>
#include <string.h>

#include <criterion/criterion.h>

#include "validate.h"

/* validate_i64 over a C string; *out is written only on success. */
static int i64(const char *s, int64_t *out)
{
    return validate_i64(s, strlen(s), out);
}

static int id(const char *s, int64_t *out)
{
    return validate_id(s, strlen(s), out);
}

Test(validate, plain_numbers_parse)
{
    int64_t n = -1;
    cr_assert_eq(i64("0", &n), 0);
    cr_assert_eq(n, 0);
    cr_assert_eq(i64("7", &n), 0);
    cr_assert_eq(n, 7);
    cr_assert_eq(i64("1234567890", &n), 0);
    cr_assert_eq(n, 1234567890);
    cr_assert_eq(i64("-42", &n), 0);
    cr_assert_eq(n, -42);
    cr_assert_eq(i64("10", &n), 0);
    cr_assert_eq(n, 10);
}

Test(validate, minus_zero_is_zero)
{
    int64_t n = 99;
    cr_assert_eq(i64("-0", &n), 0);
    cr_assert_eq(n, 0);
}

Test(validate, empty_text_and_null_are_refused)
{
    int64_t n = 5;
    cr_assert_eq(i64("", &n), -1);
    cr_assert_eq(validate_i64(NULL, 0, &n), -1);
    cr_assert_eq(validate_i64(NULL, 3, &n), -1);
    cr_assert_eq(i64("-", &n), -1);
    cr_assert_eq(n, 5, "a refused text leaves *out alone");
}

Test(validate, leading_zeros_are_refused)
{
    int64_t n = 5;
    cr_assert_eq(i64("01", &n), -1);
    cr_assert_eq(i64("00", &n), -1);
    cr_assert_eq(i64("-01", &n), -1);
    cr_assert_eq(i64("-00", &n), -1);
    cr_assert_eq(i64("0009223372036854775807", &n), -1);
    cr_assert_eq(n, 5);
}

Test(validate, signs_spaces_and_other_bytes_are_refused)
{
    int64_t n = 5;
    const char *bad[] = {
        "+1",  " 1",  "1 ",  "1\n", "\t1", "1a",    "a1",    "0x10",
        "1e3", "1.0", "--1", "-+1", "1-",  "1,000", "1_000", "\xd9\xa1" /* Arabic-Indic 1 */};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        cr_assert_eq(i64(bad[i], &n), -1, "'%s' was accepted", bad[i]);
    cr_assert_eq(n, 5);
}

Test(validate, only_len_bytes_are_read)
{
    int64_t n = 0;
    cr_assert_eq(validate_i64("123/purchase", 3, &n), 0);
    cr_assert_eq(n, 123);
    cr_assert_eq(validate_i64("12", 1, &n), 0);
    cr_assert_eq(n, 1);
    /* An embedded NUL is a byte like any other, not the end. */
    cr_assert_eq(validate_i64("1\0"
                              "2",
                              3, &n),
                 -1);
}

Test(validate, int64_max_is_the_largest)
{
    int64_t n = 0;
    cr_assert_eq(i64("9223372036854775807", &n), 0);
    cr_assert_eq(n, INT64_MAX);
    cr_assert_eq(i64("9223372036854775808", &n), -1);
    cr_assert_eq(i64("9223372036854775809", &n), -1);
    cr_assert_eq(i64("9223372036854775810", &n), -1);
    cr_assert_eq(i64("18446744073709551615", &n), -1);
    cr_assert_eq(i64("18446744073709551616", &n), -1);
    cr_assert_eq(i64("99999999999999999999", &n), -1);
    cr_assert_eq(i64("922337203685477580700", &n), -1);
    cr_assert_eq(n, INT64_MAX);
}

Test(validate, int64_min_is_the_smallest)
{
    int64_t n = 0;
    cr_assert_eq(i64("-9223372036854775808", &n), 0);
    cr_assert_eq(n, INT64_MIN);
    cr_assert_eq(i64("-9223372036854775807", &n), 0);
    cr_assert_eq(n, INT64_MIN + 1);
    cr_assert_eq(i64("-9223372036854775809", &n), -1);
    cr_assert_eq(i64("-9223372036854775810", &n), -1);
    cr_assert_eq(i64("-18446744073709551616", &n), -1);
    cr_assert_eq(n, INT64_MIN + 1);
}

Test(validate, id_is_one_to_int64_max)
{
    int64_t n = 0;
    cr_assert_eq(id("1", &n), 0);
    cr_assert_eq(n, 1);
    cr_assert_eq(id("42", &n), 0);
    cr_assert_eq(n, 42);
    cr_assert_eq(id("9223372036854775807", &n), 0);
    cr_assert_eq(n, INT64_MAX);
}

Test(validate, id_refuses_zero_negatives_and_non_numbers)
{
    int64_t n = 77;
    const char *bad[] = {
        "0",  "-0", "-1", "-9223372036854775808", "9223372036854775808", "", "01", "+1",
        " 1", "1 ", "abc"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        cr_assert_eq(id(bad[i], &n), -1, "'%s' was accepted as an id", bad[i]);
    cr_assert_eq(n, 77, "a refused id leaves *out alone");
}

Test(validate, a_list_gives_its_entries_trimmed_empty_ones_included)
{
    const char *p = " a ,\tb b,,c,", *s;
    size_t len;
    const char *want[] = {"a", "b b", "", "c", ""};
    size_t n = 0;
    while (validate_list_next(&p, &s, &len)) {
        cr_assert_lt(n, 5, "more entries than the list has");
        cr_assert_eq(len, strlen(want[n]), "entry %zu: '%.*s'", n, (int)len, s);
        cr_assert_eq(memcmp(s, want[n], len), 0, "entry %zu: '%.*s'", n, (int)len, s);
        n++;
    }
    cr_assert_eq(n, 5);
    cr_assert_null(p);
    cr_assert(validate_list_blank(" \t "));
    cr_assert(validate_list_blank(""));
    cr_assert_not(validate_list_blank(" ,"));
}

Test(validate, visible_means_printable_ascii_without_spaces)
{
    cr_assert(validate_visible("abc~!", 5));
    cr_assert_not(validate_visible("a b", 3));
    cr_assert_not(validate_visible("a\tb", 3));
    cr_assert_not(validate_visible("caf\xc3\xa9", 5));
    cr_assert(validate_visible("", 0));
}

Test(validate, a_real_is_a_whole_finite_decimal_number)
{
    double v = 0;
    cr_assert_eq(validate_real("2.5", 3, &v), 0);
    cr_expect_float_eq(v, 2.5, 1e-12);
    cr_assert_eq(validate_real("1e-3", 4, &v), 0);
    cr_expect_float_eq(v, 0.001, 1e-15);
    cr_assert_eq(validate_real("-7", 2, &v), 0);
    cr_expect_float_eq(v, -7.0, 1e-12);
    v = 9;
    const char *bad[] = {"", " 1", "1 ", "0x10", "inf", "nan", "1e999", "2.5x", "."};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        cr_expect_eq(validate_real(bad[i], strlen(bad[i]), &v), -1, "'%s'", bad[i]);
    cr_expect_float_eq(v, 9.0, 1e-12, "a refused text leaves out alone");
    cr_expect_eq(validate_real("2.5", 1, &v), 0, "only the length given is read");
    cr_expect_float_eq(v, 2.0, 1e-12);
}

Test(validate, an_audit_page_is_a_position_and_a_bounded_limit)
{
    int64_t after = -1, limit = -1;
    cr_assert_eq(validate_page(NULL, NULL, 1000, &after, &limit), 0);
    cr_assert_eq(after, 0, "no ?after=: from the first");
    cr_assert_eq(limit, 1000, "no ?limit=: the most a page holds");
    cr_assert_eq(validate_page("0", "1", 1000, &after, &limit), 0);
    cr_assert_eq(after, 0);
    cr_assert_eq(limit, 1);
    cr_assert_eq(validate_page("250", "1000", 1000, &after, &limit), 0);
    cr_assert_eq(after, 250);
    cr_assert_eq(limit, 1000);
    const char *bad_after[] = {"-1", "x", "", "1.5", " 2"};
    for (size_t i = 0; i < sizeof(bad_after) / sizeof(bad_after[0]); i++)
        cr_expect_eq(validate_page(bad_after[i], NULL, 1000, &after, &limit), -1, "after '%s'",
                     bad_after[i]);
    const char *bad_limit[] = {"0", "1001", "-5", "ten", ""};
    for (size_t i = 0; i < sizeof(bad_limit) / sizeof(bad_limit[0]); i++)
        cr_expect_eq(validate_page(NULL, bad_limit[i], 1000, &after, &limit), -1, "limit '%s'",
                     bad_limit[i]);
}
