/* credentials.c: the tokens are kept as SHA-256 digests (digest.h's), so a
 * header is compared with each in a time that depends neither on where it
 * differs nor on how long either one is. */
#include "credentials.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

#include "digest.h"
#include "validate.h"

typedef struct credential {
    unsigned char digest[DIGEST_LEN];
    unsigned scopes; /* the scope given and those it implies */
} credential;

struct credentials {
    size_t n;
    credential entry[CREDENTIALS_MAX];
};

credentials *credentials_create(void)
{
    return calloc(1, sizeof(credentials));
}

void credentials_free(credentials *c)
{
    if (!c)
        return;
    /* The digests are not the tokens, but they are as good as one to
     * whoever could forge a header from a preimage: leave nothing behind. */
    OPENSSL_cleanse(c, sizeof(*c));
    free(c);
}

/* What holding a credential of scope allows: admin may do what payments
 * may (today's admin token pays), payments may read orders. */
static unsigned implied(credential_scope scope)
{
    switch (scope) {
    case CREDENTIAL_ADMIN:
        return CREDENTIAL_ADMIN | CREDENTIAL_PAYMENTS | CREDENTIAL_ORDERS_READ;
    case CREDENTIAL_PAYMENTS:
        return CREDENTIAL_PAYMENTS | CREDENTIAL_ORDERS_READ;
    case CREDENTIAL_ORDERS_READ:
        return CREDENTIAL_ORDERS_READ;
    default:
        return 0;
    }
}

/* Calls each(token, len, position, arg) for every entry of a list, trimmed;
 * stops at the first that returns -1. Returns the number of entries, or -1
 * with why. */
static int each_entry(const char *list, int (*each)(const char *, size_t, int, void *), void *arg,
                      char *why, size_t whylen)
{
    if (validate_list_blank(list))
        return 0;
    const char *p = list, *b;
    size_t len;
    int n = 0;
    while (validate_list_next(&p, &b, &len)) {
        n++;
        if (n > CREDENTIALS_LIST_MAX) {
            snprintf(why, whylen, "more than %d tokens", CREDENTIALS_LIST_MAX);
            return -1;
        }
        if (len < CREDENTIAL_MIN || len > CREDENTIAL_LEN_MAX) {
            snprintf(why, whylen,
                     "token %d has %zu characters, not %d to %d (e.g. openssl rand -hex 24)", n,
                     len, CREDENTIAL_MIN, CREDENTIAL_LEN_MAX);
            return -1;
        }
        if (!validate_visible(b, len)) {
            snprintf(why, whylen, "token %d holds a space or a character that is not visible ASCII",
                     n);
            return -1;
        }
        if (each && each(b, len, n, arg) < 0)
            return -1;
    }
    return n;
}

int credentials_check_list(const char *list, char *why, size_t whylen)
{
    return each_entry(list, NULL, NULL, why, whylen) < 0 ? -1 : 0;
}

static int add(credentials *c, const char *token, size_t len, credential_scope scope, char *why,
               size_t whylen)
{
    if (len == 0 || len > CREDENTIAL_LEN_MAX) {
        snprintf(why, whylen, "a token must have 1 to %d characters", CREDENTIAL_LEN_MAX);
        return -1;
    }
    if (c->n == CREDENTIALS_MAX) {
        snprintf(why, whylen, "more than %d credentials in all", CREDENTIALS_MAX);
        return -1;
    }
    credential *e = &c->entry[c->n];
    if (digest_sha256(token, len, e->digest) < 0) {
        snprintf(why, whylen, "the token could not be hashed (libcrypto failed)");
        return -1;
    }
    e->scopes = implied(scope);
    c->n++;
    return 0;
}

int credentials_add(credentials *c, const char *token, credential_scope scope, char *why,
                    size_t whylen)
{
    return add(c, token, strlen(token), scope, why, whylen);
}

typedef struct list_add {
    credentials *c;
    credential_scope scope;
    char *why;
    size_t whylen;
} list_add;

static int add_entry(const char *token, size_t len, int position, void *arg)
{
    (void)position;
    list_add *la = arg;
    return add(la->c, token, len, la->scope, la->why, la->whylen);
}

int credentials_add_list(credentials *c, const char *list, credential_scope scope, char *why,
                         size_t whylen)
{
    list_add la = {c, scope, why, whylen};
    return each_entry(list, add_entry, &la, why, whylen) < 0 ? -1 : 0;
}

unsigned credentials_scopes(const credentials *c, const char *authorization)
{
    static const char prefix[] = "Bearer ";
    if (!c || !authorization || strncmp(authorization, prefix, sizeof(prefix) - 1) != 0)
        return CREDENTIAL_NONE;
    const char *given = authorization + sizeof(prefix) - 1;
    size_t len = strlen(given);
    if (len == 0)
        return CREDENTIAL_NONE;
    unsigned char digest[DIGEST_LEN];
    if (digest_sha256(given, len, digest) < 0)
        return CREDENTIAL_NONE;
    /* Every credential is compared, each in the same time, and the match
     * is folded in without a branch: how long this takes says nothing of
     * which credential, if any, the header is. */
    unsigned scopes = 0;
    for (size_t i = 0; i < c->n; i++) {
        unsigned same = (unsigned)digest_equal(digest, c->entry[i].digest, sizeof(digest));
        scopes |= c->entry[i].scopes & (0u - same);
    }
    return scopes;
}

size_t credentials_count(const credentials *c)
{
    return c ? c->n : 0;
}

const char *credentials_scope_name(credential_scope scope)
{
    switch (scope) {
    case CREDENTIAL_ADMIN:
        return "admin";
    case CREDENTIAL_PAYMENTS:
        return "payments";
    case CREDENTIAL_ORDERS_READ:
        return "orders:read";
    default:
        return "none";
    }
}
