/* room_cache.c: small hash tables under one mutex: a poll holds it for a
 * few loads and stores. */
#include "room_cache.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "digest.h"

#define ROOMS 256 /* rooms remembered (a power of two) */
/* Places a bucket holds. Direct-mapped, two buyers whose hashes met pushed
 * each other out at every poll: of the bench's 2,000 buyers polling 65,536
 * places, some 60 did, and each of their polls went to Redis. */
#define WAYS 4

typedef struct room_slot {
    room_info info;
    int has_info;
    room_frontier frontier;
    int has_frontier;
    int refreshing; /* a poll is reading the frontier from Redis */
} room_slot;

typedef struct place_slot {
    int64_t item, round, user, place;        /* place 0: free */
    unsigned char entrant[ROOM_HEX_LEN / 2]; /* E, raw: no SHA-256 a poll */
} place_slot;

struct room_cache {
    pthread_mutex_t mu;
    unsigned char master[ROOM_SECRET_LEN];
    int has_master;
    int loading_master; /* a pool job is reading it */
    unsigned victim;    /* the way a full bucket gives up next */
    room_slot rooms[ROOMS];
    place_slot *places; /* nplaces (a power of two), in buckets of WAYS */
    size_t nplaces;
    _Atomic uint64_t polls[2]; /* answered from the pool, from memory */
};

static uint64_t mix(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    return x;
}

static room_slot *slot_of(room_cache *c, int64_t item)
{
    return &c->rooms[mix((uint64_t)item) & (ROOMS - 1)];
}

room_cache *room_cache_create(size_t places)
{
    size_t n = WAYS;
    while (n < places)
        n *= 2;
    room_cache *c = calloc(1, sizeof(*c));
    if (!c)
        return NULL;
    c->nplaces = n;
    c->places = calloc(n, sizeof(*c->places));
    if (!c->places || pthread_mutex_init(&c->mu, NULL) != 0) {
        free(c->places);
        free(c);
        return NULL;
    }
    return c;
}

void room_cache_free(room_cache *c)
{
    if (!c)
        return;
    pthread_mutex_destroy(&c->mu);
    free(c->places);
    free(c);
}

int room_cache_master(room_cache *c, unsigned char *out)
{
    pthread_mutex_lock(&c->mu);
    int has = c->has_master;
    if (has)
        memcpy(out, c->master, ROOM_SECRET_LEN);
    pthread_mutex_unlock(&c->mu);
    return has;
}

void room_cache_set_master(room_cache *c, const unsigned char *master)
{
    pthread_mutex_lock(&c->mu);
    if (master) {
        memcpy(c->master, master, ROOM_SECRET_LEN);
        c->has_master = 1;
    }
    c->loading_master = 0;
    pthread_mutex_unlock(&c->mu);
}

int room_cache_claim_master(room_cache *c)
{
    pthread_mutex_lock(&c->mu);
    int claimed = !c->has_master && !c->loading_master;
    if (claimed)
        c->loading_master = 1;
    pthread_mutex_unlock(&c->mu);
    return claimed;
}

int room_cache_info(room_cache *c, int64_t item, room_info *out)
{
    pthread_mutex_lock(&c->mu);
    room_slot *s = slot_of(c, item);
    int has = s->has_info && s->info.item == item;
    if (has)
        *out = s->info;
    pthread_mutex_unlock(&c->mu);
    return has;
}

void room_cache_set_info(room_cache *c, const room_info *in)
{
    pthread_mutex_lock(&c->mu);
    room_slot *s = slot_of(c, in->item);
    if (!s->has_info || s->info.item != in->item || s->info.round != in->round) {
        s->has_frontier = 0;
        s->refreshing = 0;
    }
    s->info = *in;
    s->has_info = 1;
    pthread_mutex_unlock(&c->mu);
}

/* The frontier of item's round into *out, as room_cache_waiting reads it;
 * under c->mu. */
static int frontier_of(room_cache *c, int64_t item, int64_t round, int64_t mono_ms,
                       room_frontier *out, int *claimed)
{
    *claimed = 0;
    room_slot *s = slot_of(c, item);
    int known =
        s->has_info && s->info.item == item && s->has_frontier && s->frontier.round == round;
    int fresh = known && mono_ms - s->frontier.mono_ms < ROOM_CACHE_FRESH_MS;
    if (known)
        *out = s->frontier;
    if (!fresh && (!s->refreshing || mono_ms - s->frontier.mono_ms >= 4 * ROOM_CACHE_FRESH_MS)) {
        /* One poll reads it again; should its answer be lost, another
         * takes over after a while. */
        s->refreshing = 1;
        *claimed = 1;
    }
    return known && (fresh || !*claimed);
}

void room_cache_set_frontier(room_cache *c, int64_t item, const room_frontier *f)
{
    pthread_mutex_lock(&c->mu);
    room_slot *s = slot_of(c, item);
    if (s->has_info && s->info.item == item && s->info.round == f->round) {
        s->frontier = *f;
        s->has_frontier = 1;
        s->refreshing = 0;
    }
    pthread_mutex_unlock(&c->mu);
}

/* The first slot of the bucket of (item, round, user). */
static place_slot *bucket_of(room_cache *c, int64_t item, int64_t round, int64_t user)
{
    uint64_t h =
        mix((uint64_t)item * 0x9e3779b97f4a7c15ULL ^ mix((uint64_t)user) ^ (uint64_t)round);
    return &c->places[h & (c->nplaces - WAYS)];
}

/* Whether the place is of a room's round as memory knows it now (a place of
 * an older round, or of a room pushed out, is free to take). */
static int current(room_cache *c, const place_slot *p)
{
    const room_slot *s = slot_of(c, p->item);
    return s->has_info && s->info.item == p->item && s->info.round == p->round;
}

/* The slot of (item, round, user), or NULL when not remembered. */
static place_slot *place_in(place_slot *b, int64_t item, int64_t round, int64_t user)
{
    for (int i = 0; i < WAYS; i++)
        if (b[i].place > 0 && b[i].user == user && b[i].item == item && b[i].round == round)
            return &b[i];
    return NULL;
}

int room_cache_waiting(room_cache *c, int64_t item, int64_t user, int64_t mono_ms, room_info *info,
                       room_place *place, room_frontier *f)
{
    int claimed, known = 0;
    unsigned char e[ROOM_HEX_LEN / 2];
    pthread_mutex_lock(&c->mu); /* once a poll: two loops polling share it */
    room_slot *s = slot_of(c, item);
    if (s->has_info && s->info.item == item) {
        *info = s->info;
        place_slot *p = place_in(bucket_of(c, item, info->round, user), item, info->round, user);
        if (p) {
            known = 1;
            place->place = p->place;
            memcpy(e, p->entrant, sizeof(e));
        }
    }
    known = known && frontier_of(c, item, info->round, mono_ms, f, &claimed);
    pthread_mutex_unlock(&c->mu);
    if (known)
        digest_hex(e, sizeof(e), place->entrant);
    return known;
}

void room_cache_set_place(room_cache *c, int64_t item, int64_t round, int64_t user, int64_t place,
                          const char *entrant)
{
    place_slot slot = {item, round, user, place, {0}};
    if (place <= 0 || digest_unhex(entrant, slot.entrant, sizeof(slot.entrant)) < 0)
        return;
    pthread_mutex_lock(&c->mu);
    place_slot *b = bucket_of(c, item, round, user);
    place_slot *p = place_in(b, item, round, user);
    for (int i = 0; !p && i < WAYS; i++)
        if (b[i].place == 0 || !current(c, &b[i]))
            p = &b[i];
    if (!p) /* a full bucket: the ways in turn */
        p = &b[c->victim++ % WAYS];
    *p = slot;
    pthread_mutex_unlock(&c->mu);
}

void room_cache_count_poll(room_cache *c, int from_memory)
{
    atomic_fetch_add_explicit(&c->polls[from_memory != 0], 1, memory_order_relaxed);
}

void room_cache_metrics(room_cache *c, text_buf *t)
{
    text_buf_printf(t,
                    "# HELP seckill_room_polls_total Polls of a waiting room, by where they were "
                    "answered (memory: this instance's, pool: Redis).\n"
                    "# TYPE seckill_room_polls_total counter\n"
                    "seckill_room_polls_total{answered=\"memory\"} %" PRIu64 "\n"
                    "seckill_room_polls_total{answered=\"pool\"} %" PRIu64 "\n",
                    atomic_load(&c->polls[1]), atomic_load(&c->polls[0]));
}

void room_cache_forget(room_cache *c, int64_t item)
{
    pthread_mutex_lock(&c->mu);
    for (int i = 0; i < ROOMS; i++)
        if (item == 0 || c->rooms[i].info.item == item)
            c->rooms[i].has_info = c->rooms[i].has_frontier = c->rooms[i].refreshing = 0;
    pthread_mutex_unlock(&c->mu);
}
