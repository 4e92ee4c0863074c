/* unit_room_order.c: the waiting room's pure rules: entrant handles and the
 * known answer of a score, the shuffle's uniformity over fixed secrets, its
 * independence of the join order, the metering formula, and every way an
 * admission token can be wrong. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "buyer_token.h"
#include "chi_square.h"
#include "digest.h"
#include "room_order.h"

#define NOW 1700000000000LL

/* A fixed secret of the seed list: SHA-256("seckill-room-test|<i>"). */
static void secret_of(int i, unsigned char k[ROOM_SECRET_LEN])
{
    char seed[48];
    int n = snprintf(seed, sizeof(seed), "seckill-room-test|%d", i);
    cr_assert_eq(digest_sha256(seed, (size_t)n, k), 0);
}

static const unsigned char master[ROOM_SECRET_LEN] = "0123456789abcdef0123456789abcdef";

Test(room_order, the_entrant_handle_is_the_sha256_of_its_text)
{
    char e[ROOM_HEX_LEN + 1];
    cr_assert_eq(room_entrant(7, 3, 42, e), 0);
    /* printf 'seckill-entrant|7|3|42' | sha256sum */
    cr_assert_str_eq(e, "49a46f419dbb91be62b425e234df7e4825016eef19d276e57eac4fe1395dae06");
    char again[ROOM_HEX_LEN + 1], other[ROOM_HEX_LEN + 1];
    room_entrant(7, 3, 42, again);
    room_entrant(7, 4, 42, other);
    cr_assert_str_eq(e, again);
    cr_assert_str_neq(e, other, "another round gives another handle");
}

Test(room_order, a_score_is_the_hmac_s_leading_52_bits)
{
    unsigned char k[ROOM_SECRET_LEN];
    secret_of(0, k);
    char e[ROOM_HEX_LEN + 1];
    room_entrant(1, 1, 1, e);
    double s = room_score(k, e);
    cr_assert_geq(s, 0);
    cr_assert_lt(s, ROOM_LATE_SCORE);
    cr_assert(room_score_prestart(s));
    cr_assert_eq(s, (double)(int64_t)s, "a whole number, exact in a double");
    cr_assert_not(room_score_prestart(room_late_score(1)));
    cr_assert_lt(room_late_score(1), room_late_score(2));
}

/* The places of n buyers (users 1..n) of item 1, round r, under K. */
static void places_of(const unsigned char *k, int64_t round, int n, int *place)
{
    double *score = malloc((size_t)n * sizeof(*score));
    for (int u = 0; u < n; u++) {
        char e[ROOM_HEX_LEN + 1];
        room_entrant(1, round, u + 1, e);
        score[u] = room_score(k, e);
    }
    for (int u = 0; u < n; u++) {
        place[u] = 1;
        for (int v = 0; v < n; v++)
            if (score[v] < score[u])
                place[u]++;
    }
    free(score);
}

/* Shuffle r of the seed list: the places of n buyers under secret r, round
 * r + 1. */
static void room_shuffle(int r, int n, int *place)
{
    unsigned char k[ROOM_SECRET_LEN];
    secret_of(r, k);
    places_of(k, r + 1, n, place);
}

Test(room_order, ten_buyers_over_2000_secrets_land_in_every_place_uniformly)
{
    chi_square_assert_uniform_places(2000, room_shuffle);
}

Test(room_order, ten_thousand_joiners_places_do_not_follow_their_join_order)
{
    enum { N = 10000 };
    unsigned char k[ROOM_SECRET_LEN];
    secret_of(4242, k);
    int *place = malloc(N * sizeof(*place));
    places_of(k, 1, N, place);
    double d2 = 0;
    for (int i = 0; i < N; i++)
        d2 += ((double)(i + 1) - place[i]) * ((double)(i + 1) - place[i]);
    double rho = 1 - 6 * d2 / ((double)N * ((double)N * N - 1));
    cr_assert_lt(rho < 0 ? -rho : rho, 0.05, "Spearman's rho %.4f", rho);
    free(place);
}

Test(room_order, the_metering_formula_admits_the_burst_then_the_rate)
{
    int64_t s = NOW;
    cr_assert_eq(room_admit_target(100, 10, 5, s, s - 1), 0, "nothing before the start");
    cr_assert_eq(room_admit_target(100, 10, 5, s, s), 10);
    cr_assert_eq(room_admit_target(100, 10, 5, s, s + 999), 14);
    cr_assert_eq(room_admit_target(100, 10, 5, s, s + 1000), 15);
    cr_assert_eq(room_admit_target(12, 10, 5, s, s + 1000), 12, "never more than joined");
    cr_assert_eq(room_admit_target(100, 0, 0.5, s, s + 3000), 1);
}

Test(room_order, hex_goes_there_and_back)
{
    unsigned char k[ROOM_SECRET_LEN], back[ROOM_SECRET_LEN];
    char hex[ROOM_HEX_LEN + 1];
    secret_of(1, k);
    digest_hex(k, sizeof(k), hex);
    cr_assert_eq(digest_unhex(hex, back, sizeof(back)), 0);
    cr_assert_eq(memcmp(k, back, sizeof(k)), 0);
    hex[3] = 'G';
    cr_assert_eq(digest_unhex(hex, back, sizeof(back)), -1);
    cr_assert_eq(digest_unhex("abcd", back, sizeof(back)), -1);
}

static char token[ROOM_TOKEN_MAX];

static void mint(int64_t item, int64_t round, int64_t user, int64_t expiry)
{
    room_token t = {item, round, user, expiry};
    cr_assert_gt(room_token_mint(master, &t, token, sizeof(token)), 0);
}

static room_token_result verify(const char *tok)
{
    room_token got;
    return room_token_verify(master, tok, 5, 2, 42, NOW, &got);
}

Test(room_order, a_minted_token_verifies_for_its_buyer_item_and_round)
{
    mint(5, 2, 42, NOW + 120000);
    room_token got;
    cr_assert_eq(room_token_verify(master, token, 5, 2, 42, NOW, &got), ROOM_TOKEN_OK);
    cr_assert_eq(got.expiry_ms, NOW + 120000);
    cr_assert_eq(room_token_verify(master, token, 5, 0, 42, NOW, &got), ROOM_TOKEN_OK,
                 "round 0: not known, not judged");
    char again[ROOM_TOKEN_MAX];
    memcpy(again, token, sizeof(again));
    mint(5, 2, 42, NOW + 120000);
    cr_assert_str_eq(again, token, "the same admission, the same token");
}

Test(room_order, every_wrong_token_is_refused_with_its_reason)
{
    cr_assert_eq(verify(NULL), ROOM_TOKEN_MISSING);
    cr_assert_eq(verify(""), ROOM_TOKEN_MISSING);
    mint(5, 2, 42, NOW);
    cr_assert_eq(verify(token), ROOM_TOKEN_EXPIRED);
    mint(5, 2, 43, NOW + 1000);
    cr_assert_eq(verify(token), ROOM_TOKEN_WRONG_BUYER);
    mint(6, 2, 42, NOW + 1000);
    cr_assert_eq(verify(token), ROOM_TOKEN_WRONG_ITEM);
    mint(5, 1, 42, NOW + 1000);
    cr_assert_eq(verify(token), ROOM_TOKEN_WRONG_ROUND);

    mint(5, 2, 42, NOW + 1000);
    size_t len = strlen(token);
    for (size_t i = 0; i < len; i++) { /* every character changed */
        char bad[ROOM_TOKEN_MAX];
        memcpy(bad, token, len + 1);
        bad[i] = bad[i] == '1' ? '2' : '1';
        room_token_result r = verify(bad);
        cr_assert(r != ROOM_TOKEN_OK && r != ROOM_TOKEN_EXPIRED, "tampered at %zu: %d", i, r);
    }
    for (size_t cut = 0; cut < len; cut++) { /* every truncation */
        char bad[ROOM_TOKEN_MAX];
        memcpy(bad, token, cut);
        bad[cut] = '\0';
        room_token_result r = verify(bad);
        cr_assert(r == ROOM_TOKEN_FORGED || (cut == 0 && r == ROOM_TOKEN_MISSING), "cut %zu", cut);
    }
    char longer[ROOM_TOKEN_MAX * 2];
    snprintf(longer, sizeof(longer), "%s0", token);
    cr_assert_eq(verify(longer), ROOM_TOKEN_FORGED);
    unsigned char other[ROOM_SECRET_LEN] = {1};
    room_token got;
    cr_assert_eq(room_token_verify(other, token, 5, 2, 42, NOW, &got), ROOM_TOKEN_FORGED,
                 "another master");
}

Test(room_order, a_buyer_token_is_never_an_admission_token)
{
    char buyer[BUYER_TOKEN_MAX];
    cr_assert_gt(buyer_token_mint("0123456789abcdef0123456789abcdef", 42, NOW / 1000 + 60, buyer,
                                  sizeof(buyer)),
                 0);
    cr_assert_eq(verify(buyer), ROOM_TOKEN_FORGED);
}
