/* storm_watch.h: a sale's storm told from a counter that grows with it (the
 * feed's head, the events' sequence), looked at now and then: on while the
 * counter grows at the storm's rate, over once it has grown slower for
 * STORM_QUIET_MS in a row (a lull inside a sale, a checkpoint's fsync or a
 * worker's pause, ends nothing), and waited out for at most wait_ms of one
 * storm. Pure: seckill-webhooks reads the counter (webhook_storm.c). */
#ifndef SECKILL_STORM_WATCH_H
#define SECKILL_STORM_WATCH_H

#include <stdint.h>

/* How long the counter must grow slower than the rate for a storm to be
 * over. */
#define STORM_QUIET_MS 1000

typedef struct storm_watch {
    int64_t head, head_ms; /* the last look (head_ms 0: none yet) */
    int64_t since_ms;      /* the storm on since (0: none) */
    int64_t quiet_ms;      /* slower than the rate since (0: not) */
    int waits;             /* the last look's answer */
} storm_watch;

/* One look: the counter (never negative) reads head at now (ms, > 0, never
 * going back). rate: the storm's growth a second (> 0); wait_ms: the longest
 * one storm is waited out.
 * Returns whether to wait now (also in s->waits). The first look, and one
 * that finds the counter gone back, see no growth. */
int storm_watch_look(storm_watch *s, int64_t head, int64_t now, int64_t rate, int64_t wait_ms);

#endif
