/* events.h: listens to the cross-instance channel (KEYS_EVENTS) so that a
 * round started on one server clears the sold-out flag on all of them.
 * Messages: "round <item> <round>". */
#ifndef SECKILL_EVENTS_H
#define SECKILL_EVENTS_H

#include <stdint.h>

#include "config.h"
#include "soldout.h"

typedef struct events events;

/* Parses one message. Returns 0 with item and round set, or -1. Pure. */
int events_parse_round(const char *msg, size_t len, int64_t *item, int64_t *round);

/* Starts the subscriber thread; it resubscribes after a lost connection and
 * then clears all flags (announcements may have been missed). NULL on
 * failure. */
events *events_create(const config *cfg, soldout *flags);

/* Stops the thread. NULL is a no-op. */
void events_free(events *e);

#endif
