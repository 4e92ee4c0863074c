/* unit_room_joins.c: the queue of the waiting room's joins (room_joins.h)
 * on a real pool: every join settled exactly once, in batches of at most
 * ROOM_JOINS_BATCH taken in arrival order, batches that grow while the last
 * is on its way, and the pool's other jobs not starved by a storm. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "pool.h"
#include "room_joins.h"

enum { PRODUCERS = 4, EACH = 5000 };

static int ctx_token;
static _Atomic int settled[PRODUCERS * EACH];
static _Atomic int batches, largest, out_of_order;
static _Atomic int jobs_done, hold;
static _Atomic int done_when_other_ran = -1;

static void *make_ctx(void *arg)
{
    (void)arg;
    return &ctx_token;
}

static void free_ctx(void *ctx)
{
    (void)ctx;
}

/* A job is its number + 1 (never NULL): producer * EACH + k. */
static void run(void *thread_ctx, void **jobs, int n)
{
    cr_assert_eq(thread_ctx, &ctx_token);
    while (atomic_load(&hold)) /* the test is still queueing */
        usleep(100);
    cr_assert(n >= 1 && n <= ROOM_JOINS_BATCH, "a batch of %d", n);
    for (int i = 0; i < n; i++) {
        intptr_t id = (intptr_t)jobs[i] - 1;
        atomic_fetch_add(&settled[id], 1);
        for (int k = 0; k < i; k++) { /* one producer's jobs in the order it added them */
            intptr_t before = (intptr_t)jobs[k] - 1;
            if (before / EACH == id / EACH && before > id)
                atomic_fetch_add(&out_of_order, 1);
        }
    }
    int seen = atomic_load(&largest);
    while (n > seen && !atomic_compare_exchange_weak(&largest, &seen, n))
        ;
    atomic_fetch_add(&batches, 1);
    atomic_fetch_add(&jobs_done, n);
    usleep(200); /* a round trip to Redis: the next batch gathers meanwhile */
}

static void *produce(void *arg)
{
    room_joins *q = ((void **)arg)[0];
    intptr_t p = (intptr_t)((void **)arg)[1];
    for (intptr_t k = 0; k < EACH; k++)
        cr_assert_eq(room_joins_add(q, (void *)(p * EACH + k + 1)), 0);
    return NULL;
}

Test(room_joins, every_join_is_settled_once_in_batches_that_grow_under_load)
{
    pool *p = pool_create(4, make_ctx, free_ctx, NULL);
    room_joins *q = room_joins_create(p, run);
    cr_assert_not_null(q);
    pthread_t t[PRODUCERS];
    void *args[PRODUCERS][2];
    for (intptr_t i = 0; i < PRODUCERS; i++) {
        args[i][0] = q;
        args[i][1] = (void *)i;
        cr_assert_eq(pthread_create(&t[i], NULL, produce, args[i]), 0);
    }
    for (int i = 0; i < PRODUCERS; i++)
        pthread_join(t[i], NULL);
    pool_free(p); /* runs what is queued: the drainers empty the queue */
    room_joins_free(q);
    for (int i = 0; i < PRODUCERS * EACH; i++)
        cr_assert_eq(atomic_load(&settled[i]), 1, "job %d settled %d times", i,
                     atomic_load(&settled[i]));
    cr_assert_eq(atomic_load(&out_of_order), 0);
    cr_assert_gt(atomic_load(&largest), 1, "no two joins ever shared a batch");
    cr_assert_lt(atomic_load(&batches), PRODUCERS * EACH, "a batch a join: no group commit");
}

static void other_job(void *thread_ctx, void *arg)
{
    (void)thread_ctx;
    (void)arg;
    atomic_store(&done_when_other_ran, atomic_load(&jobs_done));
}

Test(room_joins, a_storm_of_joins_leaves_the_pool_to_other_jobs_between_batches)
{
    pool *p = pool_create(1, make_ctx, free_ctx, NULL);
    room_joins *q = room_joins_create(p, run);
    atomic_store(&hold, 1); /* the first drainer waits until all is queued */
    for (intptr_t k = 0; k < 10 * ROOM_JOINS_BATCH; k++)
        cr_assert_eq(room_joins_add(q, (void *)(k + 1)), 0);
    cr_assert_eq(pool_submit(p, other_job, NULL), 0);
    atomic_store(&hold, 0);
    /* Before pool_free: a stopping pool takes no job, and a drainer then
     * goes on alone until nothing waits. */
    for (int i = 0; i < 10000 && atomic_load(&done_when_other_ran) < 0; i++)
        usleep(1000);
    pool_free(p);
    room_joins_free(q);
    int when = atomic_load(&done_when_other_ran);
    cr_assert(when >= 0 && when <= 1 + 2 * ROOM_JOINS_BATCH,
              "the other job waited for %d of %d joins", when, 10 * ROOM_JOINS_BATCH);
    for (int k = 0; k < 10 * ROOM_JOINS_BATCH; k++)
        cr_assert_eq(atomic_load(&settled[k]), 1);
}
