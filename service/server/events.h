/* events.h: listens to the cross-instance channel (KEYS_EVENTS) so that a
 * round started on one server reaches all of them (sold-out flags, the
 * laboratory's in-process counters). Messages: "round <item> <round>". */
#ifndef SECKILL_EVENTS_H
#define SECKILL_EVENTS_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"

typedef struct events events;

/* Parses one message. Returns 0 with item and round set, or -1. Pure. */
int events_parse_round(const char *msg, size_t len, int64_t *item, int64_t *round);

/* What the subscriber calls, on its own thread. */
typedef struct events_handler {
    /* Round `round` of item began. */
    void (*on_round)(void *ctx, int64_t item, int64_t round);
    /* (Re)subscribed: announcements may have been missed, forget every round. */
    void (*on_resync)(void *ctx);
    void *ctx;
} events_handler;

/* Starts the subscriber thread; it resubscribes after a lost connection and
 * then calls on_resync. h is copied. NULL on failure. */
events *events_create(const config *cfg, const events_handler *h);

/* Stops the thread. NULL is a no-op. */
void events_free(events *e);

#endif
