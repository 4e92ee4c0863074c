/* reconcile_piece.c: the rebuild's writes to Redis, in pieces of bounded
 * size, each command tried again after a failure. */
#include "reconcile_piece.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "backoff.h"
#include "redis_reply.h"

#define COMPONENT "reconcile"

void reconcile_pause_ms(int64_t ms)
{
    backoff_sleep_ms(ms, NULL);
}

long long reconcile_retried(redis_nodes *rn, const char *key, int argc, const char **argv,
                            char *err, size_t errlen)
{
    int64_t delay = 0;
    for (int tries = 1;; tries++) {
        redisReply *r = redis_nodes_command(rn, key, argc, argv, NULL);
        long long n = r && r->type == REDIS_REPLY_INTEGER ? r->integer : -1;
        if (r && n < 0)
            redis_reply_unexpected(r, COMPONENT, argv[0]);
        else
            freeReplyObject(r);
        if (n >= 0)
            return n;
        if (tries == RECONCILE_TRIES)
            break;
        delay = backoff_next(delay, RECONCILE_BACKOFF_MAX_MS);
        reconcile_pause_ms(delay);
    }
    snprintf(err, errlen, "redis: %s %s failed %d times (logged above)", argv[0], key,
             RECONCILE_TRIES);
    return -1;
}

int reconcile_piece_init(reconcile_piece *p, redis_nodes *rn, const char *key)
{
    memset(p, 0, sizeof(*p));
    p->rn = rn;
    p->key = key;
    p->argv = malloc((2 + 2 * RECONCILE_PIECE) * sizeof(*p->argv));
    p->text = malloc(2 * RECONCILE_PIECE * sizeof(*p->text));
    return p->argv && p->text ? 0 : -1; /* reconcile_piece_close frees either */
}

void reconcile_piece_close(reconcile_piece *p)
{
    free(p->argv);
    free(p->text);
    memset(p, 0, sizeof(*p));
}

int reconcile_piece_flush(reconcile_piece *p, char *err, size_t errlen)
{
    if (p->pairs == 0)
        return 0;
    p->argv[0] = "HSET";
    p->argv[1] = p->key;
    if (reconcile_retried(p->rn, p->key, 2 + 2 * p->pairs, p->argv, err, errlen) < 0)
        return -1;
    p->pairs = 0;
    p->wrote = 1;
    return 0;
}

int reconcile_piece_add(reconcile_piece *p, const char *field, const char *value, char *err,
                        size_t errlen)
{
    int k = 2 * p->pairs;
    snprintf(p->text[k], sizeof(p->text[k]), "%s", field);
    snprintf(p->text[k + 1], sizeof(p->text[k + 1]), "%s", value);
    p->argv[2 + k] = p->text[k];
    p->argv[3 + k] = p->text[k + 1];
    return ++p->pairs == RECONCILE_PIECE ? reconcile_piece_flush(p, err, errlen) : 0;
}

int reconcile_piece_add_int(reconcile_piece *p, int64_t field, int64_t value, char *err,
                            size_t errlen)
{
    char f[24], v[24];
    snprintf(f, sizeof(f), "%" PRId64, field);
    snprintf(v, sizeof(v), "%" PRId64, value);
    return reconcile_piece_add(p, f, v, err, errlen);
}
