/* unit_json_member.c: one member of a body read as a bounded integer, at its
 * edges (json_member.c; the parsers of json_io.c and room_terms.c read
 * every integer member through it). */
#include <stdint.h>

#include <criterion/criterion.h>
#include <jansson.h>

#include "json_member.h"

/* json_member_int on the member "n" of the JSON text body, in [min, max]. */
static int member(const char *body, int64_t min, int64_t max, int64_t *out)
{
    json_t *o = json_loads(body, 0, NULL);
    cr_assert_not_null(o, "%s parses", body);
    int rc = json_member_int(o, "n", min, max, out);
    json_decref(o);
    return rc;
}

Test(json_member, an_integer_inside_the_bounds_is_read_bounds_included)
{
    int64_t n = -7;
    cr_assert_eq(member("{\"n\": 5}", 1, 10, &n), 1);
    cr_assert_eq(n, 5);
    cr_assert_eq(member("{\"n\": 1}", 1, 10, &n), 1);
    cr_assert_eq(n, 1);
    cr_assert_eq(member("{\"n\": 10}", 1, 10, &n), 1);
    cr_assert_eq(n, 10);
    cr_assert_eq(member("{\"n\": 9007199254740991}", 1, INT64_MAX, &n), 1);
    cr_assert_eq(n, 9007199254740991LL);
}

Test(json_member, an_absent_member_answers_0_and_leaves_out_alone)
{
    int64_t n = -7;
    cr_assert_eq(member("{\"m\": 5}", 1, 10, &n), 0);
    cr_assert_eq(n, -7);
}

Test(json_member, out_of_bounds_or_not_an_integer_answers_minus_1_and_leaves_out_alone)
{
    static const char *const wrong[] = {
        "{\"n\": 0}",     "{\"n\": 11}",   "{\"n\": -3}",   "{\"n\": 5.0}",
        "{\"n\": \"5\"}", "{\"n\": null}", "{\"n\": true}", "{\"n\": [5]}",
    };
    for (size_t i = 0; i < sizeof(wrong) / sizeof(*wrong); i++) {
        int64_t n = -7;
        cr_assert_eq(member(wrong[i], 1, 10, &n), -1, "%s", wrong[i]);
        cr_assert_eq(n, -7, "%s", wrong[i]);
    }
}
