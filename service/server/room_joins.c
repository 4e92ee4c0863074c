/* room_joins.c: the queue of the waiting room's joins and its drainers
 * (room_joins.h). */
#include "room_joins.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"

/* Drainers at once: while one batch is on its way to Redis, the next
 * gathers and another drainer may take it. */
#define ROOM_JOINS_DRAINERS 2

struct room_joins {
    pool *pool;
    room_joins_run run;
    pthread_mutex_t lock;
    void **jobs; /* waiting: jobs[head..len) in the order they came */
    size_t head, len, cap;
    int drainers; /* submitted to the pool and not yet done */
};

room_joins *room_joins_create(pool *p, room_joins_run fn)
{
    room_joins *q = calloc(1, sizeof(*q));
    if (!q)
        return NULL;
    q->pool = p;
    q->run = fn;
    pthread_mutex_init(&q->lock, NULL);
    return q;
}

void room_joins_free(room_joins *q)
{
    if (!q)
        return;
    pthread_mutex_destroy(&q->lock);
    free(q->jobs);
    free(q);
}

/* Takes up to ROOM_JOINS_BATCH waiting jobs into batch; with none, this
 * drainer is done. Under q->lock. */
static int take(room_joins *q, void **batch)
{
    size_t n = q->len - q->head;
    if (n > ROOM_JOINS_BATCH)
        n = ROOM_JOINS_BATCH;
    memcpy(batch, q->jobs + q->head, n * sizeof(*batch));
    q->head += n;
    if (q->head == q->len)
        q->head = q->len = 0;
    if (n == 0)
        q->drainers--;
    return (int)n;
}

/* A drainer: one batch, then to the back of the pool's queue while more
 * wait (the pool's other jobs get their turn under a storm of joins), or
 * done. */
static void drain(void *thread_ctx, void *arg)
{
    room_joins *q = arg;
    void *batch[ROOM_JOINS_BATCH];
    for (;;) {
        pthread_mutex_lock(&q->lock);
        int n = take(q, batch);
        pthread_mutex_unlock(&q->lock);
        if (n == 0)
            return;
        q->run(thread_ctx, batch, n);
        pthread_mutex_lock(&q->lock);
        int more = q->len > q->head;
        pthread_mutex_unlock(&q->lock);
        if (more && pool_submit(q->pool, drain, q) == 0)
            return; /* stopping: this drainer goes on until nothing waits */
    }
}

/* Room for one more waiting job. Under q->lock. Returns 0 or -1. */
static int make_room(room_joins *q)
{
    if (q->len < q->cap)
        return 0;
    if (q->head > 0) {
        memmove(q->jobs, q->jobs + q->head, (q->len - q->head) * sizeof(*q->jobs));
        q->len -= q->head;
        q->head = 0;
        return 0;
    }
    void **grown = array_grow(q->jobs, &q->cap, q->len + 1, sizeof(*grown), 256);
    if (!grown)
        return -1;
    q->jobs = grown;
    return 0;
}

int room_joins_add(room_joins *q, void *job)
{
    pthread_mutex_lock(&q->lock);
    int rc = make_room(q);
    if (rc == 0)
        q->jobs[q->len++] = job;
    int start = rc == 0 && q->drainers < ROOM_JOINS_DRAINERS;
    if (start)
        q->drainers++;
    pthread_mutex_unlock(&q->lock);
    if (start && pool_submit(q->pool, drain, q) < 0) {
        /* Stopping: take job back, unless a drainer already took it. */
        pthread_mutex_lock(&q->lock);
        q->drainers--;
        size_t i = q->head;
        while (i < q->len && q->jobs[i] != job)
            i++;
        int mine = i < q->len;
        if (mine)
            memmove(q->jobs + i, q->jobs + i + 1, (--q->len - i) * sizeof(*q->jobs));
        pthread_mutex_unlock(&q->lock);
        return mine ? -1 : 0;
    }
    return rc;
}
