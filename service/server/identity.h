/* identity.h: whom a request speaks for. Both kinds of caller bring
 * "Authorization: Bearer <token>": the shop's admin token, or a buyer's
 * token signed by the shop's login service (buyer_token.h). Under
 * buyer_auth = none a buyer is whoever the request names (a user_id in the
 * body or the query); under token, only the token says who a buyer is.
 * Pure: the caller brings the header, the named user and the clock. */
#ifndef SECKILL_IDENTITY_H
#define SECKILL_IDENTITY_H

#include <stdint.h>

#include "status.h"

/* How this server tells who is asking. */
typedef struct identity_rules {
    const char *admin_token;  /* "": admin calls refused */
    int buyer_tokens;         /* buyer_auth = token */
    const char *buyer_secret; /* buyer_token_secret, with buyer_tokens */
} identity_rules;

typedef struct identity {
    int admin;     /* the admin token: acts for the shop */
    int64_t buyer; /* the buyer it speaks for; 0: none named */
} identity;

/* Constant-time check of "Bearer <token>" against the admin token; an empty
 * admin token refuses everyone. Returns 1 when it matches. */
int identity_is_admin(const char *authorization, const char *admin_token);

/* Who a request with this Authorization header (NULL: none) that names
 * user `named` (0: none) speaks for, at now_s (Unix seconds):
 *   - the admin token: the admin, for the named buyer;
 *   - with buyer tokens: the token's buyer; SK_UNAUTHORIZED (*why says
 *     why: missing, malformed, forged or expired) without a valid one, and
 *     SK_FORBIDDEN when `named` is another buyer;
 *   - without: the named buyer (0 when none).
 * Returns SK_OK with *who set, or the refusal. */
sk_status identity_of(const identity_rules *rules, const char *authorization, int64_t named,
                      int64_t now_s, identity *who, const char **why);

#endif
