/* unit_draw_order.c: the draw's pure rules: the known answer of a ticket
 * with and without a beacon, the order of tickets as big-endian bytes with
 * ties by E, the serving rule (won, skipped, waitlisted) on hand-made lines,
 * and the order's uniformity over a fixed list of secrets. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "chi_square.h"
#include "digest.h"
#include "draw_order.h"
#include "room_order.h"

/* K = the bytes 0, 1, ..., 31. */
static void counting_key(unsigned char k[ROOM_SECRET_LEN])
{
    for (int i = 0; i < ROOM_SECRET_LEN; i++)
        k[i] = (unsigned char)i;
}

/* A fixed secret of the seed list: SHA-256("seckill-draw-test|<i>"). */
static void secret_of(int i, unsigned char k[ROOM_SECRET_LEN])
{
    char seed[48];
    int n = snprintf(seed, sizeof(seed), "seckill-draw-test|%d", i);
    cr_assert_eq(digest_sha256(seed, (size_t)n, k), 0);
}

static void ticket_hex(const unsigned char *k, const char *beacon, const char *e, char *hex)
{
    unsigned char t[32];
    cr_assert_eq(draw_ticket(k, beacon, beacon ? strlen(beacon) : 0, e, t), 0);
    digest_hex(t, 32, hex);
}

Test(draw_order, a_ticket_is_the_hmac_of_beacon_and_entrant_under_k)
{
    /* python3 -c 'import hashlib, hmac
     * e = hashlib.sha256(b"seckill-entrant|7|3|42").hexdigest()
     * for b in (b"", b"drand 1234"):
     *     print(hmac.new(bytes(range(32)), b"seckill-draw-v1|" + b + b"|" + e.encode(),
     *                    hashlib.sha256).hexdigest())' */
    unsigned char k[ROOM_SECRET_LEN];
    counting_key(k);
    char e[ROOM_HEX_LEN + 1], hex[ROOM_HEX_LEN + 1];
    cr_assert_eq(room_entrant(7, 3, 42, e), 0);
    ticket_hex(k, NULL, e, hex);
    cr_assert_str_eq(hex, "d320adbd7ca876d4ddb3885be0597478265d2302e283e4951dddf3b29f9d8104");
    ticket_hex(k, "", e, hex);
    cr_assert_str_eq(hex, "d320adbd7ca876d4ddb3885be0597478265d2302e283e4951dddf3b29f9d8104",
                     "an empty beacon is no beacon");
    ticket_hex(k, "drand 1234", e, hex);
    cr_assert_str_eq(hex, "d68bfb28f2806429c57015557c7d827c17977d61cb78b92350943d2651037aed");
}

Test(draw_order, a_beacon_is_any_bytes_up_to_256_and_e_is_64_hex)
{
    unsigned char k[ROOM_SECRET_LEN], t[32], u[32];
    counting_key(k);
    char e[ROOM_HEX_LEN + 1], beacon[DRAW_BEACON_MAX + 1];
    room_entrant(1, 1, 1, e);
    memset(beacon, '%', sizeof(beacon));
    beacon[7] = '\0'; /* a NUL inside: the length given counts, not the C string */
    cr_assert_eq(draw_ticket(k, beacon, DRAW_BEACON_MAX, e, t), 0);
    cr_assert_eq(draw_ticket(k, beacon, 7, e, u), 0);
    cr_assert_neq(memcmp(t, u, 32), 0);
    cr_assert_eq(draw_ticket(k, beacon, DRAW_BEACON_MAX + 1, e, t), -1, "257 bytes is too long");
    cr_assert_eq(draw_ticket(k, NULL, 3, e, t), -1);
    cr_assert_eq(draw_ticket(k, NULL, 0, "abc", t), -1, "E is 64 hex digits");
    cr_assert_eq(draw_ticket(k, NULL, 0, NULL, t), -1);
}

Test(draw_order, outcomes_are_named_as_the_schema_stores_them)
{
    const char *names[] = {"won", "waitlisted", "skipped", "won_from_waitlist"};
    draw_outcome want[] = {DRAW_WON, DRAW_WAITLISTED, DRAW_SKIPPED, DRAW_WON_FROM_WAITLIST};
    for (size_t i = 0; i < 4; i++) {
        draw_outcome o = DRAW_NONE;
        cr_assert_eq(draw_outcome_named(names[i], &o), 0);
        cr_assert_eq(o, want[i]);
        cr_assert_str_eq(draw_outcome_name(want[i]), names[i]);
    }
    draw_outcome o = DRAW_WON;
    cr_assert_null(draw_outcome_name(DRAW_NONE));
    cr_assert_null(draw_outcome_name((draw_outcome)99));
    cr_assert_eq(draw_outcome_named("none", &o), -1);
    cr_assert_eq(draw_outcome_named("", &o), -1);
    cr_assert_eq(draw_outcome_named("Won", &o), -1);
    cr_assert_eq(draw_outcome_named(NULL, &o), -1);
    cr_assert_eq(o, DRAW_WON, "a name refused leaves the outcome alone");
}

/* An entrant whose ticket starts with the bytes b0 b1 (the rest zero) and
 * whose E is 64 copies of c. */
static draw_entrant line(unsigned char b0, unsigned char b1, char c, int64_t user, int quantity)
{
    draw_entrant x = {.user = user, .quantity = quantity};
    x.ticket[0] = b0;
    x.ticket[1] = b1;
    memset(x.e, c, ROOM_HEX_LEN);
    x.e[ROOM_HEX_LEN] = '\0';
    return x;
}

Test(draw_order, entrants_sort_by_ticket_as_big_endian_bytes_then_by_e)
{
    draw_entrant v[] = {
        line(0x02, 0x00, '1', 1, 1), /* third */
        line(0x01, 0xff, '2', 2, 1), /* second: the first byte decides */
        line(0xff, 0x00, '3', 3, 1), /* last */
        line(0x01, 0x00, 'b', 4, 1), /* the same ticket as 5: E decides, 5 first */
        line(0x01, 0x00, 'a', 5, 1),
    };
    draw_sort(v, 5);
    int64_t want[] = {5, 4, 2, 1, 3};
    for (int i = 0; i < 5; i++)
        cr_assert_eq(v[i].user, want[i], "position %d: user %lld", i + 1, (long long)v[i].user);
    draw_sort(v, 0);
    draw_sort(NULL, 0);
}

/* Serves the quantities q (in ticket order) over stock and checks the
 * outcomes ("W" won, "S" skipped, "L" waitlisted) and the units won. */
static void check_serve(const int *q, size_t n, int64_t stock, const char *want, int64_t won)
{
    draw_entrant v[16];
    cr_assert_leq(n, 16);
    for (size_t i = 0; i < n; i++)
        v[i] = line((unsigned char)i, 0, 'a', (int64_t)i + 1, q[i]);
    cr_assert_eq(draw_serve(v, n, stock), won, "units won over %lld", (long long)stock);
    for (size_t i = 0; i < n; i++) {
        draw_outcome o = want[i] == 'W'   ? DRAW_WON
                         : want[i] == 'S' ? DRAW_SKIPPED
                                          : DRAW_WAITLISTED;
        cr_assert_eq(v[i].outcome, o, "position %zu over %lld: %s, not %c", i + 1, (long long)stock,
                     draw_outcome_name(v[i].outcome), want[i]);
    }
}

Test(draw_order, entrants_win_while_units_last_then_are_waitlisted)
{
    int ones[] = {1, 1, 1, 1, 1};
    check_serve(ones, 5, 3, "WWWLL", 3);
    check_serve(ones, 5, 5, "WWWWW", 5);
    check_serve(ones, 5, 9, "WWWWW", 5);
    check_serve(ones, 5, 0, "LLLLL", 0);
    check_serve(ones, 0, 3, "", 0);
}

Test(draw_order, a_quantity_that_does_not_fit_is_skipped_not_partly_served)
{
    /* 5 units: 2 won (3 left), 4 skipped, 1 won (2 left), 3 skipped, 2 won
     * (0 left), then waitlisted whatever their quantity. */
    int q[] = {2, 4, 1, 3, 2, 1, 5};
    check_serve(q, 7, 5, "WSWSWLL", 5);
    /* Every one too large while units are left: all skipped, none won. */
    int big[] = {3, 4, 5};
    check_serve(big, 3, 2, "SSS", 0);
    /* A skip leaves the units to the next whose quantity fits. */
    int fits[] = {3, 2, 2};
    check_serve(fits, 3, 2, "SWL", 2);
}

Test(draw_order, ten_thousand_entrants_of_one_unit_win_exactly_the_stock)
{
    enum { N = 10000, STOCK = 1000 };
    unsigned char k[ROOM_SECRET_LEN];
    secret_of(10000, k);
    draw_entrant *v = calloc(N, sizeof(*v));
    for (int u = 0; u < N; u++) {
        room_entrant(1, 1, u + 1, v[u].e);
        cr_assert_eq(draw_ticket(k, "beacon", 6, v[u].e, v[u].ticket), 0);
        v[u].user = u + 1;
        v[u].quantity = 1;
    }
    draw_sort(v, N);
    cr_assert_eq(draw_serve(v, N, STOCK), STOCK);
    for (int i = 0; i < N; i++) {
        if (i > 0)
            cr_assert_lt(draw_entrant_cmp(&v[i - 1], &v[i]), 0, "position %d", i + 1);
        cr_assert_eq(v[i].outcome, i < STOCK ? DRAW_WON : DRAW_WAITLISTED);
    }
    free(v);
}

/* The positions (1-based) of n entrants (users 1..n of item 1, round 1)
 * under K and beacon: what the draw orders whatever order they came in. */
static void positions_of(const unsigned char *k, const char *beacon, int n, int *position)
{
    draw_entrant *v = calloc((size_t)n, sizeof(*v));
    for (int u = 0; u < n; u++) {
        /* Entered in reverse, so the input's order is not the answer. */
        draw_entrant *x = &v[n - 1 - u];
        room_entrant(1, 1, u + 1, x->e);
        cr_assert_eq(draw_ticket(k, beacon, strlen(beacon), x->e, x->ticket), 0);
        x->user = u + 1;
    }
    draw_sort(v, (size_t)n);
    for (int i = 0; i < n; i++)
        position[v[i].user - 1] = i + 1;
    free(v);
}

/* Shuffle r of the seed list: the positions of the same n entrants under
 * secret r, without a beacon. */
static void draw_shuffle(int r, int n, int *position)
{
    unsigned char k[ROOM_SECRET_LEN];
    secret_of(r, k);
    positions_of(k, "", n, position);
}

Test(draw_order, the_same_ten_entrants_over_2000_secrets_land_in_every_position_uniformly)
{
    chi_square_assert_uniform_places(2000, draw_shuffle);
}

Test(draw_order, another_beacon_gives_another_order_under_the_same_k)
{
    enum { N = 10 };
    unsigned char k[ROOM_SECRET_LEN];
    secret_of(1, k);
    int a[N], b[N], again[N];
    positions_of(k, "", N, a);
    positions_of(k, "round 4242", N, b);
    positions_of(k, "", N, again);
    cr_assert_eq(memcmp(a, again, sizeof(a)), 0, "the same K and beacon: the same order");
    cr_assert_neq(memcmp(a, b, sizeof(a)), 0);
}
