/* credentials.h: the shop's bearer credentials and what each may do. A
 * credential is an opaque token of one scope: admin (the sales: create,
 * reset, restock...; and everything the other scopes may), payments (confirm
 * a payment, read orders) or orders:read (read any order and list, the
 * metrics). Several per scope, so one can be replaced without stopping the
 * sale. Only their SHA-256 digests are kept, and a header is compared with
 * every one of them in the same time whichever matches, or none. */
#ifndef SECKILL_CREDENTIALS_H
#define SECKILL_CREDENTIALS_H

#include <stddef.h>

/* A scope, and a set of them as a bit mask. */
typedef enum credential_scope {
    CREDENTIAL_NONE = 0,
    CREDENTIAL_ORDERS_READ = 1,
    CREDENTIAL_PAYMENTS = 2,
    CREDENTIAL_ADMIN = 4,
} credential_scope;

/* Tokens a list holds at most, and credentials a server holds at most,
 * every scope together: three full lists and admin_token always fit. */
#define CREDENTIALS_LIST_MAX 16
#define CREDENTIALS_MAX 64
/* The shortest and longest token of the lists (admin_tokens, ...): short
 * ones are guessed; the single admin_token of old configs is exempt. */
#define CREDENTIAL_MIN 16
#define CREDENTIAL_LEN_MAX 256

typedef struct credentials credentials;

/* An empty set: every header is refused. NULL when out of memory. */
credentials *credentials_create(void);
/* NULL is a no-op. */
void credentials_free(credentials *c);

/* Checks a comma-separated list of tokens ("" is an empty list): each one
 * CREDENTIAL_MIN..CREDENTIAL_LEN_MAX visible ASCII characters without a
 * comma, at most CREDENTIALS_LIST_MAX of them; spaces around a comma are
 * ignored. Returns 0, or -1 with why saying which entry (by position,
 * never its text) and what is wrong. */
int credentials_check_list(const char *list, char *why, size_t whylen);

/* Adds one token of scope (not checked against the list's rules: the old
 * admin_token goes this way). Returns 0, or -1 with why when the set is full
 * or the token is empty or too long. */
int credentials_add(credentials *c, const char *token, credential_scope scope, char *why,
                    size_t whylen);

/* Adds every token of a list that credentials_check_list accepts. Returns 0
 * or -1 with why. */
int credentials_add_list(credentials *c, const char *list, credential_scope scope, char *why,
                         size_t whylen);

/* The scopes an Authorization header's value ("Bearer <token>", NULL: none)
 * carries: those the scope of its credential implies (admin: all three;
 * payments: and orders:read), CREDENTIAL_NONE when it is no credential. */
unsigned credentials_scopes(const credentials *c, const char *authorization);

/* How many credentials the set holds. */
size_t credentials_count(const credentials *c);

/* The scope's name as the config and the errors say it ("orders:read"). */
const char *credentials_scope_name(credential_scope scope);

#endif
