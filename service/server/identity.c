/* identity.c: the shop's credentials first, then the buyer's token. */
#include "identity.h"

#include "buyer_token.h"

sk_status identity_require(const identity_rules *rules, const char *authorization,
                           credential_scope scope, const char **why)
{
    if (scope == CREDENTIAL_NONE)
        return SK_OK;
    unsigned held = credentials_scopes(rules->creds, authorization);
    if (held & (unsigned)scope)
        return SK_OK;
    switch (scope) {
    case CREDENTIAL_ADMIN:
        *why = held ? "this credential lacks the scope admin, which this route needs"
                    : "a credential of scope admin is missing or wrong";
        break;
    case CREDENTIAL_PAYMENTS:
        *why = held ? "this credential lacks the scope payments (or admin), which this route needs"
                    : "a credential of scope payments (or admin) is missing or wrong";
        break;
    default:
        *why = held ? "this credential lacks the scope orders:read (or payments, or admin), which "
                      "this route needs"
                    : "a credential of scope orders:read (or payments, or admin) is missing or "
                      "wrong";
    }
    return held ? SK_FORBIDDEN : SK_UNAUTHORIZED;
}

sk_status identity_of(const identity_rules *rules, const char *authorization, int64_t named,
                      int64_t now_s, identity *who, const char **why)
{
    *who = (identity){0, named};
    who->scopes = credentials_scopes(rules->creds, authorization);
    if (who->scopes || !rules->buyer_tokens)
        return SK_OK;
    int64_t user = 0;
    buyer_token_result r = buyer_token_verify(rules->buyer_secret, authorization, now_s, &user);
    if (r != BUYER_TOKEN_OK) {
        *why = buyer_token_result_text(r);
        return SK_UNAUTHORIZED;
    }
    if (named != 0 && named != user) {
        *why = "the user_id is not the buyer token's: a buyer acts only for themselves";
        return SK_FORBIDDEN;
    }
    who->buyer = user;
    return SK_OK;
}

int identity_acts_for_buyer(const identity *who)
{
    return who->scopes == 0 || (who->scopes & CREDENTIAL_ADMIN) != 0;
}
