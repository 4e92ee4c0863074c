/* lab_keys.h: the laboratory's Redis keys. All of an item's lab keys carry
 * the item's hash tag and the prefix {item:N}:lab:, next to the production
 * keys of keys.h, so one UNLINK (one Cluster slot) clears them. */
#ifndef SECKILL_LAB_KEYS_H
#define SECKILL_LAB_KEYS_H

#include <stddef.h>
#include <stdint.h>

/* Each returns snprintf's length; KEYS_MAX (keys.h) bytes are enough. */

/* String: units left of a Redis-stock strategy. */
int lab_keys_stock(char *buf, size_t len, int64_t item, const char *strategy);
/* Hash {strategy -> units sold}: the audit of every strategy. */
int lab_keys_sold(char *buf, size_t len, int64_t item);
/* String: the lock of a lock strategy (value: its owner's token). */
int lab_keys_lock(char *buf, size_t len, int64_t item, const char *strategy);
/* The pub/sub channel on which a lock announces its release (not a key). */
int lab_keys_lock_channel(char *buf, size_t len, int64_t item, const char *strategy);
/* String: the last fencing token issued for the strategy's lock (INCR). */
int lab_keys_fence_issued(char *buf, size_t len, int64_t item, const char *strategy);
/* String: the newest fencing token the strategy's stock has seen. */
int lab_keys_fence_seen(char *buf, size_t len, int64_t item, const char *strategy);
/* String: the meeting point of two forced racers at the strategy's lock
 * (lab_race.h). */
int lab_keys_race(char *buf, size_t len, int64_t item, const char *strategy);
/* Hash {segment -> units left} of the strategy `segmented`. */
int lab_keys_segments(char *buf, size_t len, int64_t item);
/* String: the lock of one segment. */
int lab_keys_segment_lock(char *buf, size_t len, int64_t item, int segment);

/* Every lab key of item (stocks, locks, fencing tokens and race marks of
 * the nstrategies strategies named, segment locks 0 .. nsegments-1, the
 * sold hash, the segments hash) as an argument vector that starts with argv[0] = "UNLINK".
 * Returns the vector (NULL on OOM) and its length in *argc;
 * lab_keys_free_all() frees it. */
char **lab_keys_all(int64_t item, const char *const *strategies, size_t nstrategies, int nsegments,
                    int *argc);
void lab_keys_free_all(char **argv, int argc);

#endif
