/* fuzz_request.c: libFuzzer target over everything that parses bytes from
 * outside: the router, the number validators and times, the JSON bodies,
 * the queue format of an order, the config text, the pub/sub messages,
 * the request framing rules (header names, NUL-separated) and the buyer
 * tokens of the Authorization header. The first
 * byte picks the parser, the rest is its input. Built by scripts/fuzz.sh
 * with clang -fsanitize=fuzzer,address,undefined. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "buyer_token.h"
#include "config.h"
#include "events.h"
#include "http_framing.h"
#include "json_io.h"
#include "order.h"
#include "rfc3339.h"
#include "router.h"
#include "validate.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fuzz_router(const char *text, size_t len)
{
    static const char *methods[] = {"GET", "POST", "HEAD", "DELETE", "PUT"};
    route_match m;
    (void)len;
    for (size_t i = 0; i < sizeof(methods) / sizeof(methods[0]); i++)
        router_match(methods[i], text, &m);
}

static void fuzz_bodies(const char *text, size_t len)
{
    int64_t n;
    const char *why;
    purchase_request req;
    item_spec spec;
    item_reset reset;
    json_io_parse_purchase(text, len, &req, &why);
    json_io_parse_item_spec(text, len, &spec, &why);
    json_io_parse_reset(text, len, &reset, &why);
    json_io_parse_restock(text, len, &n, &why);
}

static void fuzz_numbers(const char *text, size_t len)
{
    int64_t n;
    events_message m;
    char back[RFC3339_MAX];
    validate_i64(text, len, &n);
    validate_id(text, len, &n);
    events_parse(text, len, &m);
    if (rfc3339_parse(text, len, &n) == 0 && rfc3339_format(n, back, sizeof(back)) < 0)
        abort(); /* every time parsed can be written back */
}

/* The canonical reader of order_decode must agree with jansson's. */
static void fuzz_order(const char *text, size_t len)
{
    order o, slow;
    char buf[256];
    memset(&o, 0, sizeof(o));
    memset(&slow, 0, sizeof(slow));
    int rc = order_decode(text, len, &o);
    if (rc != order_decode_json(text, len, &slow) || (rc == 0 && memcmp(&o, &slow, sizeof(o))))
        abort();
    if (rc == 0)
        order_encode(&o, buf, sizeof(buf));
}

static void fuzz_config(const char *text, size_t len)
{
    config cfg;
    char err[CONFIG_ERRLEN];
    (void)len;
    config_init(&cfg);
    config_parse_text(&cfg, text, "fuzz", err, sizeof(err));
    config_free(&cfg);
}

/* The text is header names separated by NUL bytes; the first of them is
 * the version of the request line. */
static void fuzz_framing(const char *text, size_t len)
{
    http_framing f = {0};
    const char *end = text + len;
    const char *version = text;
    const char *name = text + strnlen(text, len);
    while (name < end) {
        name++;
        size_t n = strnlen(name, (size_t)(end - name));
        http_framing_note(&f, name, n);
        name += n;
    }
    http_framing_problem(&f, version);
}

/* The text is an Authorization header. A token that verifies is the one
 * mint writes for its buyer and expiry, byte for byte (corpus/buyer_token
 * holds one of this secret's). */
static void fuzz_buyer_token(const char *text, size_t len)
{
    static const char secret[] = "fuzz-buyer-token-secret-0123456789abcdef";
    int64_t user = 0;
    char again[BUYER_TOKEN_MAX];
    (void)len;
    if (buyer_token_verify(secret, text, 1, &user) != BUYER_TOKEN_OK)
        return;
    const char *token = text + strlen("Bearer ");
    const char *expiry = strchr(token, '.') + 1;
    if (buyer_token_mint(secret, user, strtoll(expiry, NULL, 10), again, sizeof(again)) < 0 ||
        strcmp(again, token) != 0)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static void (*const targets[])(const char *, size_t) = {
        fuzz_router, fuzz_bodies,  fuzz_numbers,     fuzz_order,
        fuzz_config, fuzz_framing, fuzz_buyer_token,
    };
    if (size < 1)
        return 0;
    /* A NUL-terminated copy: the C-string parsers stop at the first NUL,
     * the length-taking ones see every byte. */
    char *text = malloc(size);
    memcpy(text, data + 1, size - 1);
    text[size - 1] = '\0';
    targets[data[0] % (sizeof(targets) / sizeof(targets[0]))](text, size - 1);
    free(text);
    return 0;
}
