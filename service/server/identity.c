/* identity.c: the admin token first, then the buyer's. */
#include "identity.h"

#include <string.h>

#include "buyer_token.h"

int identity_is_admin(const char *authorization, const char *admin_token)
{
    static const char prefix[] = "Bearer ";
    size_t tlen = strlen(admin_token);
    if (tlen == 0 || !authorization || strncmp(authorization, prefix, sizeof(prefix) - 1) != 0)
        return 0;
    const char *given = authorization + sizeof(prefix) - 1;
    size_t glen = strlen(given);
    /* Compare every byte whatever the first difference: the time taken must
     * not tell how much of a guess was right. */
    unsigned char diff = glen != tlen;
    for (size_t i = 0; i < tlen; i++)
        diff |= (unsigned char)(admin_token[i] ^ (i < glen ? given[i] : 0));
    return diff == 0;
}

sk_status identity_of(const identity_rules *rules, const char *authorization, int64_t named,
                      int64_t now_s, identity *who, const char **why)
{
    *who = (identity){0, named};
    if (identity_is_admin(authorization, rules->admin_token)) {
        who->admin = 1;
        return SK_OK;
    }
    if (!rules->buyer_tokens)
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
