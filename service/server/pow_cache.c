/* pow_cache.c: one mutex over a small table; nothing here does I/O. */
#include "pow_cache.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define POW_CACHE_SLOTS 1024

struct pow_cache {
    pthread_mutex_t mu;
    pow_item_terms slots[POW_CACHE_SLOTS]; /* item 0: empty */
    unsigned char key[POW_KEY_LEN];
    int have_key;
};

pow_cache *pow_cache_create(void)
{
    pow_cache *c = calloc(1, sizeof(*c));
    if (c && pthread_mutex_init(&c->mu, NULL) != 0) {
        free(c);
        return NULL;
    }
    return c;
}

void pow_cache_free(pow_cache *c)
{
    if (!c)
        return;
    pthread_mutex_destroy(&c->mu);
    free(c);
}

static pow_item_terms *slot_of(pow_cache *c, int64_t item)
{
    return &c->slots[(uint64_t)item % POW_CACHE_SLOTS];
}

int pow_cache_terms(pow_cache *c, int64_t item, int64_t mono_ms, pow_item_terms *out)
{
    pthread_mutex_lock(&c->mu);
    pow_item_terms *s = slot_of(c, item);
    int fresh = item != 0 && s->item == item && mono_ms - s->read_mono_ms < POW_CACHE_FRESH_MS;
    if (fresh)
        *out = *s;
    pthread_mutex_unlock(&c->mu);
    return fresh;
}

void pow_cache_set_terms(pow_cache *c, const pow_item_terms *t)
{
    pthread_mutex_lock(&c->mu);
    *slot_of(c, t->item) = *t;
    pthread_mutex_unlock(&c->mu);
}

void pow_cache_forget(pow_cache *c, int64_t item)
{
    pthread_mutex_lock(&c->mu);
    for (size_t i = 0; i < POW_CACHE_SLOTS; i++)
        if (item == 0 || c->slots[i].item == item)
            c->slots[i].item = 0;
    pthread_mutex_unlock(&c->mu);
}

int pow_cache_key(pow_cache *c, unsigned char *key)
{
    pthread_mutex_lock(&c->mu);
    int have = c->have_key;
    if (have)
        memcpy(key, c->key, POW_KEY_LEN);
    pthread_mutex_unlock(&c->mu);
    return have;
}

void pow_cache_set_key(pow_cache *c, const unsigned char *key)
{
    pthread_mutex_lock(&c->mu);
    memcpy(c->key, key, POW_KEY_LEN);
    c->have_key = 1;
    pthread_mutex_unlock(&c->mu);
}
