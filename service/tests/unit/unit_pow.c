/* unit_pow.c: proof-of-work challenges in ALTCHA's v1 shape (pow.h), an
 * item's proof-of-work terms (pow_terms.h) and an instance's memory of them
 * (pow_cache.h). The vectors were computed by
 * Python's hashlib and hmac, an implementation independent of ours:
 *
 *   salt = "00112233445566778899aabb?expires=1700000000&item=7&user=42&"
 *   hashlib.sha256((salt + "4242").encode()).hexdigest()
 *   hmac.new(bytes(range(32)), challenge.encode(), hashlib.sha256).hexdigest()
 *   base64.b64encode(json.dumps({..., "took": 1234}).encode())   (VECTOR_PAYLOAD) */
#include <string.h>

#include <criterion/criterion.h>
#include <jansson.h>

#include "pow.h"
#include "pow_cache.h"
#include "pow_solver.h"
#include "pow_terms.h"

#define NONCE "00112233445566778899aabb"
#define SALT NONCE "?expires=1700000000&item=7&user=42&"
#define CHALLENGE "df50982904c8121e40ed7497a3f8f95ce455d61ad6e87a55d965666bc12243b9"
#define SIGNATURE "1053595d1549309e0880bc521a4c82621352ed9f4a70fd5dd3883ad2c3e35808"
#define EXPIRES 1700000000
#define VECTOR_PAYLOAD                                                                             \
    "eyJhbGdvcml0aG0iOiAiU0hBLTI1NiIsICJjaGFsbGVuZ2UiOiAiZGY1MDk4MjkwNGM4MTIxZTQwZWQ3NDk3YTNm"     \
    "OGY5NWNlNDU1ZDYxYWQ2ZTg3YTU1ZDk2NTY2NmJjMTIyNDNiOSIsICJudW1iZXIiOiA0MjQyLCAic2FsdCI6ICIw"     \
    "MDExMjIzMzQ0NTU2Njc3ODg5OWFhYmI/ZXhwaXJlcz0xNzAwMDAwMDAwJml0ZW09NyZ1c2VyPTQyJiIsICJzaWdu"     \
    "YXR1cmUiOiAiMTA1MzU5NWQxNTQ5MzA5ZTA4ODBiYzUyMWE0YzgyNjIxMzUyZWQ5ZjRhNzBmZDVkZDM4ODNhZDJj"     \
    "M2UzNTgwOCIsICJ0b29rIjogMTIzNH0="

static unsigned char key[POW_KEY_LEN];

static void init_key(void)
{
    for (int i = 0; i < POW_KEY_LEN; i++)
        key[i] = (unsigned char)i;
}

TestSuite(pow, .init = init_key);

static pow_result verify(const char *payload, int64_t item, int64_t user, int64_t now_s)
{
    pow_solution got;
    return pow_verify(key, payload, 100000, item, user, now_s, &got);
}

/* The vector's payload with one member changed. */
static const char *altered(const char *challenge, int64_t number, const char *salt,
                           const char *signature)
{
    static char out[POW_PAYLOAD_MAX + 1];
    cr_assert_eq(pow_solver_payload(challenge, number, salt, signature, out, sizeof(out)), 0);
    return out;
}

Test(pow, a_challenge_is_the_one_python_computes)
{
    pow_challenge c;
    cr_assert_eq(pow_challenge_build(key, NONCE, 4242, 100000, 7, 42, EXPIRES, &c), 0);
    cr_assert_str_eq(c.salt, SALT);
    cr_assert_str_eq(c.challenge, CHALLENGE);
    cr_assert_str_eq(c.signature, SIGNATURE);
    cr_assert_eq(c.maxnumber, 100000);
}

Test(pow, the_key_is_derived_under_its_own_label)
{
    unsigned char derived[POW_KEY_LEN];
    char hex[2 * POW_KEY_LEN + 1];
    cr_assert_eq(pow_key_derive(key, derived), 0);
    for (int i = 0; i < POW_KEY_LEN; i++)
        snprintf(hex + 2 * i, 3, "%02x", derived[i]);
    /* hmac.new(bytes(range(32)), b"seckill-pow-key-v1", hashlib.sha256) */
    cr_assert_str_eq(hex, "110f9cbf8fc7624fd3dd361a0869ece14124e2efaa7076c3ad202ecbad352f82");
    cr_assert_neq(memcmp(derived, key, POW_KEY_LEN), 0);
}

Test(pow, the_widgets_payload_verifies_with_what_its_salt_says)
{
    pow_solution got;
    cr_assert_eq(pow_verify(key, VECTOR_PAYLOAD, 100000, 7, 42, EXPIRES, &got), POW_OK);
    cr_assert_eq(got.number, 4242);
    cr_assert_eq(got.expires_s, EXPIRES);
    cr_assert_eq(got.item, 7);
    cr_assert_eq(got.user, 42);
    cr_assert_str_eq(got.challenge, CHALLENGE);
}

Test(pow, every_wrong_solution_is_refused_with_the_reason)
{
    cr_assert_eq(verify(NULL, 7, 42, EXPIRES), POW_MISSING);
    cr_assert_eq(verify("", 7, 42, EXPIRES), POW_MISSING);
    cr_assert_eq(verify(VECTOR_PAYLOAD, 7, 42, EXPIRES + 1), POW_EXPIRED);
    cr_assert_eq(verify(VECTOR_PAYLOAD, 8, 42, EXPIRES), POW_WRONG_ITEM);
    cr_assert_eq(verify(VECTOR_PAYLOAD, 7, 43, EXPIRES), POW_WRONG_BUYER);
    cr_assert_eq(verify(altered(CHALLENGE, 4243, SALT, SIGNATURE), 7, 42, EXPIRES),
                 POW_WRONG_NUMBER);
    /* Another buyer written into the salt: the number no longer solves it. */
    cr_assert_eq(
        verify(altered(CHALLENGE, 4242, NONCE "?expires=1700000000&item=7&user=43&", SIGNATURE), 7,
               43, EXPIRES),
        POW_WRONG_NUMBER);
    char forged[] = SIGNATURE;
    forged[0] = forged[0] == 'e' ? 'f' : 'e';
    cr_assert_eq(verify(altered(CHALLENGE, 4242, SALT, forged), 7, 42, EXPIRES), POW_FORGED);
    unsigned char other[POW_KEY_LEN] = {0};
    pow_solution got;
    cr_assert_eq(pow_verify(other, VECTOR_PAYLOAD, 100000, 7, 42, EXPIRES, &got), POW_FORGED);
    /* The number past the item's maxnumber, though it solves the challenge. */
    cr_assert_eq(pow_verify(key, VECTOR_PAYLOAD, 4241, 7, 42, EXPIRES, &got), POW_WRONG_NUMBER);
    cr_assert_eq(pow_verify(key, VECTOR_PAYLOAD, 4242, 7, 42, EXPIRES, &got), POW_OK);
}

Test(pow, what_is_not_a_payload_is_malformed)
{
    const char *bad[] = {
        "not base64!",
        "e30=",     /* {} */
        "W10=",     /* [] */
        "eyJhIjox", /* {"a":1 */
        altered(CHALLENGE, 4242, NONCE, SIGNATURE),
        /* the last parameter not followed by '&' */
        altered(CHALLENGE, 4242, NONCE "?expires=1700000000&item=7&user=42", SIGNATURE),
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        cr_assert_eq(verify(bad[i], 7, 42, EXPIRES), POW_MALFORMED, "%zu", i);
    cr_assert_eq(
        verify(altered(CHALLENGE, 4242, NONCE "?expires=1&expires=2&item=7&user=42&", SIGNATURE), 7,
               42, 0),
        POW_MALFORMED);
    cr_assert_eq(verify(altered("BABA", 4242, SALT, SIGNATURE), 7, 42, EXPIRES), POW_MALFORMED);
    cr_assert_eq(verify(altered(CHALLENGE, -1, SALT, SIGNATURE), 7, 42, EXPIRES), POW_MALFORMED);
}

/* ALTCHA v1's salt splicing: solved as user 12 with number 345, sent as
 * user 123 with number 45, the hash and the signature still hold. The
 * salt's last parameter ends with '&', so the spliced salt is refused. */
Test(pow, a_digit_moved_from_the_number_into_the_salt_is_refused)
{
    pow_challenge c;
    cr_assert_eq(pow_challenge_build(key, NONCE, 345, 100000, 7, 12, EXPIRES, &c), 0);
    cr_assert_eq(verify(altered(c.challenge, 345, c.salt, c.signature), 7, 12, EXPIRES), POW_OK);
    char spliced[sizeof(c.salt) + 1];
    snprintf(spliced, sizeof(spliced), "%s3", c.salt);
    cr_assert_eq(verify(altered(c.challenge, 45, spliced, c.signature), 7, 123, EXPIRES),
                 POW_MALFORMED);
}

Test(pow, a_made_challenge_is_solved_by_brute_force_and_verifies)
{
    pow_challenge c, d;
    cr_assert_eq(pow_challenge_make(key, 2000, 9, 11, EXPIRES, &c), 0);
    cr_assert_eq(pow_challenge_make(key, 2000, 9, 11, EXPIRES, &d), 0);
    cr_assert_str_neq(c.salt, d.salt, "each challenge has a salt of its own");
    char json[1024], payload[POW_PAYLOAD_MAX + 1];
    snprintf(json, sizeof(json),
             "{\"algorithm\":\"SHA-256\",\"challenge\":\"%s\",\"maxnumber\":%lld,"
             "\"salt\":\"%s\",\"signature\":\"%s\"}",
             c.challenge, (long long)c.maxnumber, c.salt, c.signature);
    int64_t number = -1;
    cr_assert_eq(pow_solver_solve(json, payload, sizeof(payload), &number), 0);
    cr_assert(number >= 0 && number <= 2000);
    cr_assert_eq(verify(payload, 9, 11, EXPIRES), POW_OK);
}

static sk_status terms(const char *body, pow_terms *t, const char **why)
{
    json_t *root = json_loads(body, 0, NULL);
    cr_assert_not_null(root);
    sk_status st = pow_terms_parse(root, t, why);
    json_decref(root);
    return st;
}

Test(pow_terms, none_by_default_and_the_terms_when_named)
{
    pow_terms t;
    const char *why = NULL;
    cr_assert_eq(terms("{}", &t, &why), SK_OK);
    cr_assert_eq(t.maxnumber, 0);
    cr_assert_eq(t.ttl_s, POW_TTL_DEFAULT_S);
    cr_assert(!t.given_maxnumber && !t.given_ttl);
    cr_assert_eq(terms("{\"pow_maxnumber\":50000,\"pow_ttl_s\":60}", &t, &why), SK_OK);
    cr_assert_eq(t.maxnumber, 50000);
    cr_assert_eq(t.ttl_s, 60);
    cr_assert(t.given_maxnumber && t.given_ttl);
    cr_assert_eq(terms("{\"pow_maxnumber\":null}", &t, &why), SK_OK);
    cr_assert(t.given_maxnumber && t.maxnumber == 0);
    json_t *item = json_object();
    cr_assert_eq(pow_terms_json(item, &t), 0);
    cr_assert(json_is_null(json_object_get(item, "pow_maxnumber")));
    cr_assert_eq(json_integer_value(json_object_get(item, "pow_ttl_s")), POW_TTL_DEFAULT_S);
    json_decref(item);
}

Test(pow_terms, every_bad_term_is_refused_naming_its_field)
{
    const char *maxnumber[] = {"{\"pow_maxnumber\":999}", "{\"pow_maxnumber\":10000001}",
                               "{\"pow_maxnumber\":\"5000\"}", "{\"pow_maxnumber\":5000.5}"};
    const char *ttl[] = {"{\"pow_ttl_s\":0}", "{\"pow_ttl_s\":86401}", "{\"pow_ttl_s\":null}"};
    pow_terms t;
    for (size_t i = 0; i < sizeof(maxnumber) / sizeof(maxnumber[0]); i++) {
        const char *why = NULL;
        cr_assert_eq(terms(maxnumber[i], &t, &why), SK_INVALID, "%s", maxnumber[i]);
        cr_assert(strstr(why, "pow_maxnumber"), "%s", why);
    }
    for (size_t i = 0; i < sizeof(ttl) / sizeof(ttl[0]); i++) {
        const char *why = NULL;
        cr_assert_eq(terms(ttl[i], &t, &why), SK_INVALID, "%s", ttl[i]);
        cr_assert(strstr(why, "pow_ttl_s"), "%s", why);
    }
}

Test(pow_cache, terms_are_kept_a_second_and_forgotten_at_a_new_round)
{
    pow_cache *c = pow_cache_create();
    cr_assert_not_null(c);
    pow_item_terms t = {
        .item = 5, .found = 1, .maxnumber = 2000, .ttl_s = 60, .read_mono_ms = 1000};
    pow_item_terms got;
    cr_assert_eq(pow_cache_terms(c, 5, 1000, &got), 0, "nothing read yet");
    pow_cache_set_terms(c, &t);
    cr_assert_eq(pow_cache_terms(c, 5, 1000 + POW_CACHE_FRESH_MS - 1, &got), 1);
    cr_assert_eq(got.maxnumber, 2000);
    cr_assert_eq(pow_cache_terms(c, 5, 1000 + POW_CACHE_FRESH_MS, &got), 0, "stale");
    cr_assert_eq(pow_cache_terms(c, 5 + 1024, 1000, &got), 0, "another item in the same slot");
    pow_cache_forget(c, 5);
    cr_assert_eq(pow_cache_terms(c, 5, 1000, &got), 0, "a new round forgets it");
    unsigned char k[POW_KEY_LEN];
    cr_assert_eq(pow_cache_key(c, k), 0);
    pow_cache_set_key(c, key);
    cr_assert_eq(pow_cache_key(c, k), 1);
    cr_assert_eq(memcmp(k, key, POW_KEY_LEN), 0);
    pow_cache_free(c);
}
