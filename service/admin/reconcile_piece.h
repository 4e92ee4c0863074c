/* reconcile_piece.h: the rebuild's writes to Redis (reconcile_rebuild.c)
 * in pieces of bounded size: a hash filled RECONCILE_PIECE fields a command,
 * and every command, being safe to repeat, tried again after a failure (a
 * timeout on a busy machine) with the project's back-off. */
#ifndef SECKILL_RECONCILE_PIECE_H
#define SECKILL_RECONCILE_PIECE_H

#include <stddef.h>
#include <stdint.h>

#include "redis_nodes.h"

/* Fields one HSET writes at most: a few milliseconds of Redis's time, far
 * inside any client timeout. */
#define RECONCILE_PIECE 4096
/* Tries of a command in all, with a back-off of up to a second between. */
#define RECONCILE_TRIES 8
#define RECONCILE_BACKOFF_MAX_MS 1000

/* A hash being filled: HSET key field value ... */
typedef struct reconcile_piece {
    redis_nodes *rn;
    const char *key;
    const char **argv;
    char (*text)[24]; /* the fields and values argv points to */
    int pairs;        /* gathered, not yet written */
    int wrote;        /* a field went to key */
} reconcile_piece;

/* Starts filling key through rn (key is not copied). 0, or -1 when out of
 * memory (close it all the same). */
int reconcile_piece_init(reconcile_piece *p, redis_nodes *rn, const char *key);
void reconcile_piece_close(reconcile_piece *p);

/* Adds a field and its value (up to 23 bytes each), and writes the piece
 * once it holds RECONCILE_PIECE. 0, or -1 with err set. */
int reconcile_piece_add(reconcile_piece *p, const char *field, const char *value, char *err,
                        size_t errlen);
int reconcile_piece_add_int(reconcile_piece *p, int64_t field, int64_t value, char *err,
                            size_t errlen);

/* Writes the fields gathered (none: nothing). 0, or -1 with err set. */
int reconcile_piece_flush(reconcile_piece *p, char *err, size_t errlen);

/* A command about key that is safe to repeat, through rn: tried again after
 * a failure (logged) up to RECONCILE_TRIES times. Returns Redis's integer
 * answer, or -1 with err set. */
long long reconcile_retried(redis_nodes *rn, const char *key, int argc, const char **argv,
                            char *err, size_t errlen);

/* Sleeps ms milliseconds. */
void reconcile_pause_ms(int64_t ms);

#endif
