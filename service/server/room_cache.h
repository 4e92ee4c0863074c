/* room_cache.h: what one server instance keeps of the waiting rooms, so
 * that a poll from a buyer far behind the admitted frontier is answered
 * from memory, not from Redis (issue 27): each room's terms and secret as
 * last read, its frontier (refreshed at most every ROOM_CACHE_FRESH_MS by
 * the one poll that claims the refresh), the buyers' places and entrant
 * handles once the sale started (they never change after the start; a
 * bucket's place of an older round goes first), and the master key of the
 * admission tokens. Bounded tables (a room or a place pushed out is read
 * again: speed, never correctness). Thread-safe (one mutex). It also
 * counts the polls answered from memory and those that went to the pool. */
#ifndef SECKILL_ROOM_CACHE_H
#define SECKILL_ROOM_CACHE_H

#include <stdint.h>

#include "room_order.h"
#include "text_buf.h"

typedef struct room_cache room_cache;

#define ROOM_CACHE_FRESH_MS 500

/* A room as read from Redis (lua/room_reset.lua's hash). */
typedef struct room_info {
    int64_t item, round;
    int64_t prequeue_ms, starts_ms, ends_ms;
    double per_s;
    int segments;
    unsigned char k[ROOM_SECRET_LEN];
} room_info;

/* The admitted frontier as a poll read it. */
typedef struct room_frontier {
    int64_t round;
    int64_t admitted, joined;
    int sold_out;
    int64_t redis_ms; /* Redis's clock when read */
    int64_t mono_ms;  /* our monotonic clock when read */
} room_frontier;

/* places: buyers' places remembered at most (rounded up to a power of two;
 * 64 bytes each: config's room_places). NULL when out of memory. */
room_cache *room_cache_create(size_t places);
void room_cache_free(room_cache *c); /* NULL: no-op */

/* The master key into out: 1, or 0 when not loaded yet. */
int room_cache_master(room_cache *c, unsigned char *out);
/* The master key read (NULL: the read failed); either way the load that
 * room_cache_claim_master claimed is over. */
void room_cache_set_master(room_cache *c, const unsigned char *master);
/* 1 when the caller should load the master key (not loaded, and no other
 * load under way), which it then ends with room_cache_set_master; else 0. */
int room_cache_claim_master(room_cache *c);

/* item's room into *out: 1, or 0 when not known. */
int room_cache_info(room_cache *c, int64_t item, room_info *out);
void room_cache_set_info(room_cache *c, const room_info *in);

/* item's frontier as a poll read it from Redis (ending the read that
 * room_cache_waiting claimed). */
void room_cache_set_frontier(room_cache *c, int64_t item, const room_frontier *f);

/* A buyer's place (1-based) and entrant handle (hex, room_order.h). */
typedef struct room_place {
    int64_t place;
    char entrant[ROOM_HEX_LEN + 1];
} room_place;

/* What a poll from memory needs, under one lock: item's room into *info,
 * user's place in its round into *place, and its frontier into
 * *f. 1 when all three are known and the frontier is fresh at mono_ms, or
 * stale while another poll reads it again (one caller is answered 0
 * instead: it should read it from Redis, room_cache_set_frontier); else 0. */
int room_cache_waiting(room_cache *c, int64_t item, int64_t user, int64_t mono_ms, room_info *info,
                       room_place *place, room_frontier *f);
/* A buyer's place (1-based) in item's round, final once the sale started,
 * and their entrant handle (hex; not remembered when it is not hex). */
void room_cache_set_place(room_cache *c, int64_t item, int64_t round, int64_t user, int64_t place,
                          const char *entrant);

/* Counts a poll answered from memory (from_memory set) or sent to the pool. */
void room_cache_count_poll(room_cache *c, int from_memory);
/* Appends the counts to t as /metrics text (seckill_room_polls_total). */
void room_cache_metrics(room_cache *c, text_buf *t);

/* A new round of item began (or all is stale: item 0): forgets its room. */
void room_cache_forget(room_cache *c, int64_t item);

#endif
