/* identity.h: whom a request speaks for. Both kinds of caller bring
 * "Authorization: Bearer <token>": one of the shop's credentials, each of a
 * scope (credentials.h: admin, payments, orders:read), or a buyer's token
 * signed by the shop's login service (buyer_token.h). Under buyer_auth =
 * none a buyer is whoever the request names (a user_id in the body or the
 * query); under token, only the token says who a buyer is. Pure: the caller
 * brings the header, the named user and the clock. */
#ifndef SECKILL_IDENTITY_H
#define SECKILL_IDENTITY_H

#include <stdint.h>

#include "credentials.h"
#include "status.h"

/* How this server tells who is asking. */
typedef struct identity_rules {
    const credentials *creds; /* the shop's credentials; NULL: none */
    int buyer_tokens;         /* buyer_auth = token */
    const char *buyer_secret; /* buyer_token_secret, with buyer_tokens */
} identity_rules;

typedef struct identity {
    unsigned scopes; /* a shop's credential: the scopes it carries; 0: none */
    int64_t buyer;   /* the buyer it speaks for; 0: none named */
} identity;

/* Whether a request with this Authorization header (NULL: none) may call a
 * route that needs scope (CREDENTIAL_NONE: anyone may). Returns SK_OK;
 * SK_UNAUTHORIZED when it carries none of the shop's credentials;
 * SK_FORBIDDEN when its credential lacks the scope. *why (static) names the
 * scope needed. */
sk_status identity_require(const identity_rules *rules, const char *authorization,
                           credential_scope scope, const char **why);

/* Who a request with this Authorization header (NULL: none) that names
 * user `named` (0: none) speaks for, at now_s (Unix seconds):
 *   - a shop's credential: its scopes, for the named buyer;
 *   - with buyer tokens: the token's buyer; SK_UNAUTHORIZED (*why says
 *     why: missing, malformed, forged or expired) without a valid one, and
 *     SK_FORBIDDEN when `named` is another buyer;
 *   - without: the named buyer (0 when none).
 * Returns SK_OK with *who set, or the refusal. */
sk_status identity_of(const identity_rules *rules, const char *authorization, int64_t named,
                      int64_t now_s, identity *who, const char **why);

/* Whether who may act for the buyer it names (buy, cancel): a buyer for
 * themselves, and a shop's credential only of scope admin. */
int identity_acts_for_buyer(const identity *who);

#endif
