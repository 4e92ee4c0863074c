/* pool.c: a mutex, a condition variable and a linked queue. */
#include "pool.h"

#include <pthread.h>
#include <stdlib.h>

#include "status.h"

typedef struct pool_job {
    pool_job_fn fn;
    void *arg;
    struct pool_job *next;
} pool_job;

struct pool {
    pthread_mutex_t lock;
    pthread_cond_t ready;
    pool_job *head, *tail;
    int stopping;
    int nthreads;
    pthread_t *threads;
    pool_ctx_make make;
    pool_ctx_free free_ctx;
    void *factory_arg;
};

static void *pool_main(void *arg)
{
    pool *p = arg;
    void *ctx = p->make ? p->make(p->factory_arg) : NULL;
    for (;;) {
        pthread_mutex_lock(&p->lock);
        while (!p->head && !p->stopping)
            pthread_cond_wait(&p->ready, &p->lock);
        pool_job *j = p->head;
        if (j) {
            p->head = j->next;
            if (!p->head)
                p->tail = NULL;
        }
        pthread_mutex_unlock(&p->lock);
        if (!j)
            break; /* stopping and drained */
        j->fn(ctx, j->arg);
        free(j);
    }
    if (p->free_ctx)
        p->free_ctx(ctx);
    return NULL;
}

pool *pool_create(int nthreads, pool_ctx_make make, pool_ctx_free free_ctx, void *factory_arg)
{
    pool *p = calloc(1, sizeof(*p));
    if (!p)
        return NULL;
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->ready, NULL);
    p->make = make;
    p->free_ctx = free_ctx;
    p->factory_arg = factory_arg;
    p->threads = calloc((size_t)nthreads, sizeof(pthread_t));
    if (!p->threads)
        goto fail;
    for (; p->nthreads < nthreads; p->nthreads++)
        if (pthread_create(&p->threads[p->nthreads], NULL, pool_main, p) != 0)
            goto fail;
    return p;
fail:
    pool_free(p);
    return NULL;
}

int pool_submit(pool *p, pool_job_fn fn, void *arg)
{
    pool_job *j = malloc(sizeof(*j));
    if (!j)
        return -1;
    j->fn = fn;
    j->arg = arg;
    j->next = NULL;
    pthread_mutex_lock(&p->lock);
    if (p->stopping) {
        pthread_mutex_unlock(&p->lock);
        free(j);
        return -1;
    }
    if (p->tail)
        p->tail->next = j;
    else
        p->head = j;
    p->tail = j;
    pthread_cond_signal(&p->ready);
    pthread_mutex_unlock(&p->lock);
    return 0;
}

int pool_submit_exchange(pool *p, http_exchange *ex, pool_job_fn fn, void *job)
{
    /* Deferred first: a pool thread may answer before pool_submit returns. */
    http_exchange_defer(ex);
    if (pool_submit(p, fn, job) == 0)
        return 0;
    free(job);
    http_exchange_reply_error(ex, SK_BACKEND_DOWN, "the server is stopping");
    return -1;
}

void pool_free(pool *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->lock);
    p->stopping = 1;
    pthread_cond_broadcast(&p->ready);
    pthread_mutex_unlock(&p->lock);
    for (int i = 0; i < p->nthreads; i++)
        pthread_join(p->threads[i], NULL);
    free(p->threads);
    pthread_mutex_destroy(&p->lock);
    pthread_cond_destroy(&p->ready);
    free(p);
}
