/* unit_digest.c: the one hashing module against published answers (RFC 4231's
 * HMAC-SHA256 test cases, FIPS 180's SHA-256 examples), the same answers from
 * threads that race to its first use, hex both ways, and the compare. */
#include <pthread.h>
#include <string.h>

#include <criterion/criterion.h>

#include "digest.h"

/* hex of HMAC-SHA256(key, msg) as digest_hmac_hex gives it. */
static void hmac_hex(const void *key, size_t key_len, const void *msg, size_t len, char *out)
{
    cr_assert_eq(digest_hmac_hex(key, key_len, msg, len, out), 0);
}

Test(digest, hmac_sha256_gives_rfc_4231s_answers)
{
    char hex[DIGEST_HEX_LEN + 1];
    unsigned char key[131], data[50];

    memset(key, 0x0b, 20); /* test case 1 */
    hmac_hex(key, 20, "Hi There", 8, hex);
    cr_assert_str_eq(hex, "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");

    hmac_hex("Jefe", 4, "what do ya want for nothing?", 28, hex); /* 2: a key shorter */
    cr_assert_str_eq(hex, "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");

    memset(key, 0xaa, 20); /* 3 */
    memset(data, 0xdd, 50);
    hmac_hex(key, 20, data, 50, hex);
    cr_assert_str_eq(hex, "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe");

    for (int i = 0; i < 25; i++) /* 4 */
        key[i] = (unsigned char)(i + 1);
    memset(data, 0xcd, 50);
    hmac_hex(key, 25, data, 50, hex);
    cr_assert_str_eq(hex, "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b");

    memset(key, 0xaa, 131); /* 6: a key longer than a block is hashed first */
    const char *m6 = "Test Using Larger Than Block-Size Key - Hash Key First";
    hmac_hex(key, 131, m6, strlen(m6), hex);
    cr_assert_str_eq(hex, "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");

    const char *m7 = "This is a test using a larger than block-size key and a larger than "
                     "block-size data. The key needs to be hashed before being used by the "
                     "HMAC algorithm."; /* 7 */
    hmac_hex(key, 131, m7, strlen(m7), hex);
    cr_assert_str_eq(hex, "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2");
}

Test(digest, hmac_raw_bytes_are_the_hex_ones)
{
    unsigned char mac[DIGEST_LEN], back[DIGEST_LEN];
    char hex[DIGEST_HEX_LEN + 1];
    cr_assert_eq(digest_hmac("Jefe", 4, "what do ya want for nothing?", 28, mac), 0);
    hmac_hex("Jefe", 4, "what do ya want for nothing?", 28, hex);
    cr_assert_eq(digest_unhex(hex, back, sizeof(back)), 0);
    cr_assert_eq(memcmp(mac, back, DIGEST_LEN), 0);
}

Test(digest, an_empty_key_and_message_are_hashed_too)
{
    char hex[DIGEST_HEX_LEN + 1];
    /* python3: hmac.new(b'', b'', 'sha256').hexdigest() */
    hmac_hex("", 0, "", 0, hex);
    cr_assert_str_eq(hex, "b613679a0814d9ec772f95d778c35fc5ff1697c493715653c6c712144292c5ad");
    hmac_hex(NULL, 0, "", 0, hex);
    cr_assert_str_eq(hex, "b613679a0814d9ec772f95d778c35fc5ff1697c493715653c6c712144292c5ad");
}

Test(digest, sha256_gives_fips_180s_answers)
{
    char hex[DIGEST_HEX_LEN + 1];
    unsigned char md[DIGEST_LEN];
    cr_assert_eq(digest_sha256_hex("abc", 3, hex), 0);
    cr_assert_str_eq(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    const char *two_blocks = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    cr_assert_eq(digest_sha256_hex(two_blocks, strlen(two_blocks), hex), 0);
    cr_assert_str_eq(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    cr_assert_eq(digest_sha256_hex("", 0, hex), 0);
    cr_assert_str_eq(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    cr_assert_eq(digest_sha256("abc", 3, md), 0);
    cr_assert_eq(md[0], 0xba);
    cr_assert_eq(md[31], 0xad);
}

#define THREADS 8

static void *hash_at_once(void *arg)
{
    (void)arg;
    static const char want_sha[] =
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
    static const char want_hmac[] =
        "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843";
    char sha[DIGEST_HEX_LEN + 1], mac[DIGEST_HEX_LEN + 1];
    long bad = 0;
    for (int i = 0; i < 200; i++) {
        bad += digest_sha256_hex("abc", 3, sha) != 0 || strcmp(sha, want_sha) != 0;
        bad += digest_hmac_hex("Jefe", 4, "what do ya want for nothing?", 28, mac) != 0 ||
               strcmp(mac, want_hmac) != 0;
    }
    return (void *)bad;
}

Test(digest, threads_racing_to_the_first_use_get_the_same_answers)
{
    /* Criterion runs each test in a process of its own: this is the first use. */
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++)
        cr_assert_eq(pthread_create(&t[i], NULL, hash_at_once, NULL), 0);
    for (int i = 0; i < THREADS; i++) {
        void *bad;
        pthread_join(t[i], &bad);
        cr_assert_eq((long)bad, 0, "thread %d got a wrong answer", i);
    }
}

Test(digest, hex_is_lower_case_and_read_back_only_so)
{
    const unsigned char in[] = {0x00, 0x0f, 0xa5, 0xff};
    unsigned char back[4];
    char hex[9];
    digest_hex(in, sizeof(in), hex);
    cr_assert_str_eq(hex, "000fa5ff");
    cr_assert_eq(digest_unhex(hex, back, sizeof(back)), 0);
    cr_assert_eq(memcmp(in, back, sizeof(in)), 0);
    cr_assert_eq(digest_unhex("000FA5FF", back, sizeof(back)), -1, "upper case is refused");
    cr_assert_eq(digest_unhex("000fa5f", back, sizeof(back)), -1, "one digit short");
    cr_assert_eq(digest_unhex("000fa5ff00", back, sizeof(back)), -1, "one byte long");
    cr_assert_eq(digest_unhex("000fa5fg", back, sizeof(back)), -1, "not a digit");
    cr_assert_eq(digest_unhex(NULL, back, sizeof(back)), -1);
    digest_hex(in, 0, hex);
    cr_assert_str_eq(hex, "");
}

Test(digest, equal_says_whether_the_bytes_are_the_same)
{
    cr_assert_eq(digest_equal("abcdef", "abcdef", 6), 1);
    cr_assert_eq(digest_equal("abcdef", "abcdeF", 6), 0);
    cr_assert_eq(digest_equal("Xbcdef", "abcdef", 6), 0);
    cr_assert_eq(digest_equal("abc", "xyz", 0), 1, "no bytes are the same bytes");
}
