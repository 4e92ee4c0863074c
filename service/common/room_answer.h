/* room_answer.h: a buyer's standing in a waiting room as the queue routes
 * answer it (issue 27), from what Redis (or the instance's memory) said.
 * Pure: the caller brings the clock and the jitter. */
#ifndef SECKILL_ROOM_ANSWER_H
#define SECKILL_ROOM_ANSWER_H

#include <stdint.h>

#include "room_order.h"

/* What was seen of the room and of the buyer in it. */
typedef struct room_seen {
    int64_t now_ms; /* Redis's clock */
    int64_t starts_ms, ends_ms;
    double per_s;
    int64_t admitted;  /* the frontier: places admitted so far */
    int64_t rank;      /* the buyer's 0-based rank; -1: not joined */
    int64_t expiry_ms; /* the buyer's admission expiry; 0: not admitted */
    int sold_out;
} room_seen;

typedef struct room_standing {
    const char *state; /* prequeue, waiting, admitted, expired, sold_out, ended */
    int64_t place;     /* 1-based; 0: null (before the start) */
    int64_t ahead;     /* places ahead not admitted yet; -1: null */
    int64_t wait_ms;   /* an estimate of the wait */
    int64_t refresh_after_ms;
    char entrant[ROOM_HEX_LEN + 1];
    char admission[ROOM_TOKEN_MAX]; /* "": none */
    int64_t admission_expires_ms;
    int64_t admission_left_ms; /* expires - now, by Redis's clock */
} room_standing;

/* When to ask again at the earliest and latest, in ms. */
#define ROOM_REFRESH_MIN_MS 250
#define ROOM_REFRESH_MAX_MS 10000

/* The standing of seen into *out (entrant and admission left to the
 * caller); jitter01 in [0, 1) spreads refresh_after_ms over +-20% so that
 * the polls do not synchronise. */
void room_answer_standing(const room_seen *seen, double jitter01, room_standing *out);

/* The longest answer room_answer_json makes, with its '\0'. */
#define ROOM_ANSWER_MAX 512

/* {"state","place","ahead","wait_ms","refresh_after_ms","entrant"[,
 *  "admission","admission_expires_at","admission_expires_in_ms"]}; the caller frees it, NULL when
 * out of memory or when a string of st would need escaping (state, entrant
 * and admission are letters, digits, '.', '_' and '-'). */
char *room_answer_json(const room_standing *st);

#endif
