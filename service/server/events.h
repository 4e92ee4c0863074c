/* events.h: listens to the cross-instance channel (KEYS_EVENTS) so that a
 * round started on one server reaches all of them (sold-out flags, the
 * laboratory's in-process counters) and a change of a round's stock (a
 * restock, units of cancelled or expired orders given back) reaches all of
 * them (sold-out flags), and so does an archive (purchases answered 404 from
 * memory). Messages: "round <item> <round>", "archive <item>",
 * "restock <item> <round> <changes>" and "return <item> <round> <changes>",
 * changes counting the round's restocks and returns so far
 * (lua/order_return.lua publishes nothing: order_return.c does). */
#ifndef SECKILL_EVENTS_H
#define SECKILL_EVENTS_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"

typedef struct events events;

typedef enum events_kind { EVENTS_ROUND, EVENTS_STOCK, EVENTS_ARCHIVE } events_kind;

typedef struct events_message {
    events_kind kind;
    int64_t item;    /* EVENTS_ARCHIVE: the item, this alone */
    int64_t round;   /* the round that began, or the one whose stock changed */
    int64_t changes; /* EVENTS_STOCK: the round's restocks and returns so far */
} events_message;

/* Parses one message. Returns 0 with *m set, or -1. Pure. */
int events_parse(const char *msg, size_t len, events_message *m);

/* What the subscriber calls, on its own thread. */
typedef struct events_handler {
    /* A round began or its stock changed. */
    void (*on_message)(void *ctx, const events_message *m);
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
