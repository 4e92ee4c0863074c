/* unit_draw_verify.c: scripts/draw-verify without a server, on audits that
 * draw_order.c computes (so the script and the C agree on the ticket, the
 * order and the serving rule): an honest one passes, and one with two lines
 * swapped, one whose K is not the committed one, or one with an outcome the
 * serving rule does not give fails. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "digest.h"
#include "draw_order.h"
#include "room_order.h"

/* 144 units: under both secrets of the tests a quantity does not fit once. */
enum { ITEM = 9, ROUND = 2, N = 200, STOCK = 144 };
#define BEACON "drand 4242"

static char dir[] = "/tmp/seckill-unit-draw-verify-XXXXXX";
static char audit_path[64], out_path[64];

static void make_dir(void)
{
    cr_assert_not_null(mkdtemp(dir));
    snprintf(audit_path, sizeof(audit_path), "%s/audit.json", dir);
    snprintf(out_path, sizeof(out_path), "%s/out.txt", dir);
}

static void remove_dir(void)
{
    unlink(audit_path);
    unlink(out_path);
    rmdir(dir);
}

TestSuite(draw_verify, .init = make_dir, .fini = remove_dir);

/* A fixed secret: SHA-256("seckill-draw-verify-test|<name>"). */
static void secret_of(const char *name, unsigned char k[ROOM_SECRET_LEN])
{
    char seed[64];
    int n = snprintf(seed, sizeof(seed), "seckill-draw-verify-test|%s", name);
    cr_assert_eq(digest_sha256(seed, (size_t)n, k), 0);
}

/* The draw of users 1..N (quantities 1 to 3) under k and BEACON over STOCK
 * units, as the server makes it; one in seven not served by the draw is
 * marked served later from the waitlist. */
static void draw(const unsigned char *k, draw_entrant *v)
{
    for (int u = 0; u < N; u++) {
        cr_assert_eq(room_entrant(ITEM, ROUND, u + 1, v[u].e), 0);
        cr_assert_eq(draw_ticket(k, BEACON, strlen(BEACON), v[u].e, v[u].ticket), 0);
        v[u].user = u + 1;
        v[u].quantity = 1 + u % 3;
    }
    draw_sort(v, N);
    int64_t won = draw_serve(v, N, STOCK);
    cr_assert_eq(won, STOCK, "the stock is all won: some skipped, the rest waitlisted");
    int waiting = 0, skipped = 0;
    for (int i = 0; i < N; i++) {
        skipped += v[i].outcome == DRAW_SKIPPED;
        if (v[i].outcome != DRAW_WON && ++waiting % 7 == 0)
            v[i].outcome = DRAW_WON_FROM_WAITLIST;
    }
    cr_assert_gt(skipped, 0, "the case has a skip");
}

/* Writes the audit of v as the audit route publishes it, the commitment of
 * committed and the secret published. */
static void save(const unsigned char *committed, const unsigned char *published,
                 const draw_entrant *v)
{
    char commitment[ROOM_HEX_LEN + 1], secret[ROOM_HEX_LEN + 1], ticket[ROOM_HEX_LEN + 1];
    cr_assert_eq(room_commitment(committed, commitment), 0);
    digest_hex(published, ROOM_SECRET_LEN, secret);
    FILE *f = fopen(audit_path, "w");
    cr_assert_not_null(f);
    fprintf(f,
            "{\"item\": %d, \"round\": %d, \"commitment\": \"%s\", \"secret\": \"%s\", "
            "\"beacon\": \"%s\", \"stock\": %d, \"next_after\": null, \"entrants\": [",
            ITEM, ROUND, commitment, secret, BEACON, STOCK);
    for (int i = 0; i < N; i++) {
        digest_hex(v[i].ticket, 32, ticket);
        fprintf(f,
                "%s\n {\"position\": %d, \"entrant\": \"%s\", \"ticket\": \"%s\", "
                "\"quantity\": %d, \"outcome\": \"%s\"}",
                i ? "," : "", i + 1, v[i].e, ticket, v[i].quantity,
                draw_outcome_name(v[i].outcome));
    }
    fprintf(f, "]}\n");
    cr_assert_eq(fclose(f), 0);
}

/* Runs scripts/draw-verify --audit on the saved audit with more args;
 * returns its exit status, what it printed into said (len bytes). */
static int verify(const char *args, char *said, size_t len)
{
    char cmd[512];
    snprintf(cmd, sizeof(cmd), "python3 '%s/scripts/draw-verify' --audit '%s' %s >'%s' 2>&1",
             SECKILL_SOURCE_DIR, audit_path, args, out_path);
    int status = system(cmd);
    cr_assert(WIFEXITED(status), "draw-verify did not exit");
    FILE *f = fopen(out_path, "r");
    cr_assert_not_null(f);
    size_t n = fread(said, 1, len - 1, f);
    said[n] = '\0';
    fclose(f);
    return WEXITSTATUS(status);
}

Test(draw_verify, an_honest_audit_passes_and_a_buyer_finds_their_line)
{
    unsigned char k[ROOM_SECRET_LEN];
    draw_entrant v[N];
    char said[4096], e[ROOM_HEX_LEN + 1], want[160];
    secret_of("k", k);
    draw(k, v);
    save(k, k, v);
    cr_assert_eq(verify("--user 42", said, sizeof(said)), 0, "%s", said);
    cr_assert_not_null(strstr(said, "draw-verify: ok:"), "%s", said);
    room_entrant(ITEM, ROUND, 42, e);
    int position = 0;
    while (v[position].user != 42)
        position++;
    snprintf(want, sizeof(want), "buyer 42: entrant %s, position %d of %d, %s", e, position + 1, N,
             draw_outcome_name(v[position].outcome));
    cr_assert_not_null(strstr(said, want), "%s\nnot in\n%s", want, said);
}

Test(draw_verify, two_lines_swapped_fail)
{
    unsigned char k[ROOM_SECRET_LEN];
    draw_entrant v[N], t;
    char said[4096];
    secret_of("k", k);
    draw(k, v);
    t = v[3], v[3] = v[9], v[9] = t;
    save(k, k, v);
    cr_assert_eq(verify("", said, sizeof(said)), 1, "%s", said);
    cr_assert_not_null(strstr(said, "position 4: published"), "%s", said);
    cr_assert_not_null(strstr(said, "position 10: published"), "%s", said);
    cr_assert_not_null(strstr(said, "FAILED"), "%s", said);
}

Test(draw_verify, a_secret_that_is_not_the_committed_one_fails_though_the_order_follows_it)
{
    unsigned char k[ROOM_SECRET_LEN], other[ROOM_SECRET_LEN];
    draw_entrant v[N];
    char said[4096];
    secret_of("k", k);
    secret_of("other", other);
    draw(other, v);
    save(k, other, v);
    cr_assert_eq(verify("", said, sizeof(said)), 1, "%s", said);
    cr_assert_not_null(strstr(said, "not the commitment"), "%s", said);
}

Test(draw_verify, an_outcome_the_serving_rule_does_not_give_fails)
{
    unsigned char k[ROOM_SECRET_LEN];
    draw_entrant v[N];
    char said[4096];
    secret_of("k", k);
    draw(k, v);
    int last = N - 1; /* waitlisted (or served later): the draw did not serve it */
    cr_assert_neq(v[last].outcome, DRAW_WON);
    v[last].outcome = DRAW_WON;
    save(k, k, v);
    cr_assert_eq(verify("", said, sizeof(said)), 1, "%s", said);
    cr_assert_not_null(strstr(said, "position 200 ("), "%s", said);
}
