/* ratelimit.c: a set-associative table of buckets (4 ways), one mutex per
 * group of sets. A bucket refills lazily: tokens = min(burst, tokens +
 * elapsed * rate) when it is touched. */
#include "ratelimit.h"

#include <pthread.h>
#include <stdlib.h>

#define WAYS 4
#define LOCKS 64

typedef struct bucket {
    int64_t key; /* 0: free */
    double tokens;
    int64_t at_ms; /* when tokens was computed */
} bucket;

struct ratelimit {
    double rate_per_ms;
    double burst;
    unsigned nsets;  /* a power of two */
    bucket *buckets; /* nsets * WAYS */
    pthread_mutex_t locks[LOCKS];
};

ratelimit *ratelimit_create(double rate_per_s, double burst, unsigned capacity)
{
    ratelimit *r = calloc(1, sizeof(*r));
    if (!r)
        return NULL;
    r->nsets = 64;
    while (r->nsets * WAYS < capacity)
        r->nsets <<= 1;
    r->buckets = calloc((size_t)r->nsets * WAYS, sizeof(bucket));
    if (!r->buckets) {
        free(r);
        return NULL;
    }
    r->rate_per_ms = rate_per_s / 1000.0;
    r->burst = burst < 1 ? 1 : burst;
    for (int i = 0; i < LOCKS; i++)
        pthread_mutex_init(&r->locks[i], NULL);
    return r;
}

void ratelimit_free(ratelimit *r)
{
    if (!r)
        return;
    for (int i = 0; i < LOCKS; i++)
        pthread_mutex_destroy(&r->locks[i]);
    free(r->buckets);
    free(r);
}

static double refilled(const ratelimit *r, const bucket *b, int64_t now_ms)
{
    double t = b->tokens + (double)(now_ms > b->at_ms ? now_ms - b->at_ms : 0) * r->rate_per_ms;
    return t < r->burst ? t : r->burst;
}

int64_t ratelimit_take(ratelimit *r, int64_t key, int64_t now_ms)
{
    uint64_t h = (uint64_t)key * 0x9E3779B97F4A7C15ull;
    unsigned set = (unsigned)(h >> 32) & (r->nsets - 1);
    bucket *ways = &r->buckets[(size_t)set * WAYS];
    pthread_mutex_t *lock = &r->locks[set % LOCKS];
    pthread_mutex_lock(lock);
    bucket *b = NULL, *fullest = &ways[0];
    double fullest_tokens = -1;
    for (int w = 0; w < WAYS && !b; w++) {
        if (ways[w].key == key) {
            b = &ways[w];
        } else {
            double t = ways[w].key ? refilled(r, &ways[w], now_ms) : r->burst + 1;
            if (t > fullest_tokens) {
                fullest_tokens = t;
                fullest = &ways[w];
            }
        }
    }
    if (!b) { /* a new buyer, or one forgotten: a full bucket */
        b = fullest;
        b->key = key;
        b->tokens = r->burst;
        b->at_ms = now_ms;
    }
    b->tokens = refilled(r, b, now_ms);
    b->at_ms = now_ms;
    int64_t wait = 0;
    if (b->tokens >= 1) {
        b->tokens -= 1;
    } else {
        wait = (int64_t)((1 - b->tokens) / r->rate_per_ms) + 1;
    }
    pthread_mutex_unlock(lock);
    return wait;
}
