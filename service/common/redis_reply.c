/* redis_reply.c: a Redis reply read as a number, or judged unexpected. */
#include "redis_reply.h"

#include <errno.h>
#include <stdlib.h>

#include "log.h"
#include "validate.h"

int redis_reply_number(const redisReply *r, int64_t *out)
{
    if (!r)
        return -1;
    if (r->type == REDIS_REPLY_INTEGER) {
        *out = r->integer;
        return 0;
    }
    if ((r->type != REDIS_REPLY_STRING && r->type != REDIS_REPLY_STATUS) || r->len == 0 ||
        (r->str[0] != '-' && (r->str[0] < '0' || r->str[0] > '9')))
        return -1; /* strtoll would pass over spaces and a sign */
    char *end;
    errno = 0;
    long long n = strtoll(r->str, &end, 10);
    if (errno != 0 || end != r->str + r->len)
        return -1;
    *out = n;
    return 0;
}

int redis_reply_number_or(const redisReply *r, int64_t absent, int64_t *out)
{
    if (r && r->type == REDIS_REPLY_NIL) {
        *out = absent;
        return 0;
    }
    return redis_reply_number(r, out);
}

int redis_reply_numbers(const redisReply *r, size_t from, size_t n, int64_t *out)
{
    if (!r || r->type != REDIS_REPLY_ARRAY || r->elements < from + n)
        return -1;
    for (size_t i = 0; i < n; i++)
        if (redis_reply_number(r->element[from + i], &out[i]) < 0)
            return -1;
    return 0;
}

int redis_reply_real(const redisReply *r, double *out)
{
    if (r && r->type == REDIS_REPLY_INTEGER) {
        *out = (double)r->integer;
        return 0;
    }
    return r && r->type == REDIS_REPLY_STRING ? validate_real(r->str, r->len, out) : -1;
}

int redis_reply_unexpected(redisReply *r, const char *component, const char *what)
{
    const char *why = !r ? "no reply" : r->type == REDIS_REPLY_ERROR ? r->str : "unexpected reply";
    log_msg(LOG_WARN, component, "redis%s%s: %s", what ? " " : "", what ? what : "", why);
    freeReplyObject(r);
    return -1;
}

int redis_reply_int(redisReply *r, const char *component, const char *what, int64_t *out)
{
    if (redis_reply_number(r, out) < 0)
        return redis_reply_unexpected(r, component, what);
    freeReplyObject(r);
    return 0;
}

int redis_reply_expect(redisReply *r, int type, const char *component, const char *what)
{
    if (!r || r->type != type)
        return redis_reply_unexpected(r, component, what);
    freeReplyObject(r);
    return 0;
}
