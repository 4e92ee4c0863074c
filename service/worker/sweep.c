/* sweep.c: the recovery sweep: heartbeats, the election of one sweeper per
 * period, and the move of a dead worker's processing lists onto the queues.
 *
 * A worker that dies for good leaves its processing list behind, and no
 * other worker reads another's list. So every worker refreshes a heartbeat
 * key with a TTL, and once per period the worker that wins the sweep lock
 * (document 002's scheduled job on many nodes: SET NX PX, never released,
 * so at most one sweep per period) moves each list whose worker has no
 * heartbeat back onto the queue.
 *
 * Why no order is lost or doubled:
 *   - One script per list moves the whole list onto its item's queue: Redis
 *     runs it whole, so an order is always in exactly one of the two lists.
 *     The heartbeat lives in another Redis Cluster slot than the list, so
 *     the script cannot read it; instead every run of a worker claims each
 *     of its lists (keys_claim, in the list's slot) before it touches it,
 *     and the sweep reads the claim, then finds the heartbeat gone, then
 *     moves the list only if the claim is unchanged: a worker that takes
 *     its id back in between keeps its list.
 *   - Orders the dead worker had already committed come back too; the
 *     insert is idempotent (ON CONFLICT DO NOTHING), so whoever takes them
 *     next inserts nothing and acknowledges them.
 *   - A worker wrongly taken for dead (paused past its TTL) still holds its
 *     batch in memory: it commits it and trims its list, which then holds
 *     only orders it moved after the sweep, all of them in that batch. The
 *     swept copies are inserted again as no-ops. A repeat, never a loss.
 *   - Two sweeps at once (a sweep outlasting its lock) find each list once:
 *     the second finds it empty. */
#include "sweep.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "backend.h"
#include "clock.h"
#include "keys.h"
#include "log.h"
#include "redis_reply.h"

#define COMPONENT "sweep"

void sweep_token(char *buf, size_t len, const char *worker_id)
{
    uint64_t rnd = 0;
    if (getrandom(&rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
        rnd = (uint64_t)clock_wall_ms() ^ ((uint64_t)clock_mono_ms() << 20);
    snprintf(buf, len, "%s:%ld:%016" PRIx64, worker_id, (long)getpid(), rnd);
}

int sweep_heartbeat(redis_nodes *rn, const scripts *sc, const char *worker_id, const char *token,
                    int64_t ttl_ms, char *holder, size_t holder_len, int64_t *pttl_ms)
{
    char key[KEYS_MAX], ttl[24];
    keys_worker_alive(key, sizeof(key), worker_id);
    snprintf(ttl, sizeof(ttl), "%" PRId64, ttl_ms);
    const char *ka[] = {key, token, ttl};
    redisReply *r = redis_nodes_script(rn, &sc->s[SCRIPT_HEARTBEAT], 1, 2, ka);
    if (!r)
        return -1;
    if (r->type != REDIS_REPLY_ARRAY || r->elements < 1 ||
        r->element[0]->type != REDIS_REPLY_INTEGER)
        return redis_reply_unexpected(r, COMPONENT, "heartbeat");
    int rc = r->element[0]->integer == 1;
    if (!rc) {
        if (r->elements != 3 || r->element[1]->type != REDIS_REPLY_STRING ||
            r->element[2]->type != REDIS_REPLY_INTEGER)
            return redis_reply_unexpected(r, COMPONENT, "heartbeat");
        snprintf(holder, holder_len, "%s", r->element[1]->str);
        *pttl_ms = r->element[2]->integer;
    }
    freeReplyObject(r);
    return rc;
}

int sweep_heartbeat_release(redis_nodes *rn, const scripts *sc, const char *worker_id,
                            const char *token)
{
    char key[KEYS_MAX];
    keys_worker_alive(key, sizeof(key), worker_id);
    /* Compare and delete: never a newer run's heartbeat. */
    const char *ka[] = {key, token};
    redisReply *r = redis_nodes_script(rn, &sc->s[SCRIPT_LOCK_RELEASE], 1, 1, ka);
    if (!r)
        return -1;
    return redis_reply_expect(r, REDIS_REPLY_INTEGER, COMPONENT, "heartbeat release");
}

int sweep_elect(redis_nodes *rn, const char *lock, const char *token, int64_t period_ms)
{
    char ms[24];
    snprintf(ms, sizeof(ms), "%" PRId64, period_ms);
    const char *argv[] = {"SET", lock, token, "NX", "PX", ms};
    redisReply *r = redis_nodes_command(rn, lock, 6, argv, NULL);
    if (!r)
        return -1;
    if (r->type == REDIS_REPLY_NIL) {
        freeReplyObject(r);
        return 0;
    }
    return redis_reply_expect(r, REDIS_REPLY_STATUS, COMPONENT, "sweep lock") < 0 ? -1 : 1;
}

int sweep_claim(redis_nodes *rn, int64_t item, const char *worker_id, const char *token)
{
    char key[KEYS_MAX];
    keys_claim(key, sizeof(key), item, worker_id);
    const char *argv[] = {"SET", key, token};
    redisReply *r = redis_nodes_command(rn, key, 3, argv, NULL);
    if (!r)
        return -1;
    return redis_reply_expect(r, REDIS_REPLY_STATUS, COMPONENT, "claim");
}

long long sweep_recover(redis_nodes *rn, const scripts *sc, int64_t item, const char *worker_id)
{
    char list[KEYS_MAX], queue[KEYS_MAX], claim_key[KEYS_MAX], alive[KEYS_MAX];
    char claim[SWEEP_TOKEN_MAX] = "";
    keys_processing(list, sizeof(list), item, worker_id);
    keys_queue(queue, sizeof(queue), item);
    keys_claim(claim_key, sizeof(claim_key), item, worker_id);
    keys_worker_alive(alive, sizeof(alive), worker_id);
    /* The claim first, then the heartbeat: a run that claims after this
     * read had its heartbeat set before, and the script sees its claim.
     * Each read goes to its key's node: the two live in different slots. */
    const char *get[] = {"GET", claim_key};
    redisReply *r = redis_nodes_command(rn, claim_key, 2, get, NULL);
    if (!r)
        return -1;
    if (r->type != REDIS_REPLY_STRING && r->type != REDIS_REPLY_NIL)
        return redis_reply_unexpected(r, COMPONENT, "sweep claim");
    if (r->type == REDIS_REPLY_STRING)
        snprintf(claim, sizeof(claim), "%s", r->str);
    freeReplyObject(r);
    const char *exists[] = {"EXISTS", alive};
    r = redis_nodes_command(rn, alive, 2, exists, NULL);
    int64_t alive_now = 0;
    if (!r || redis_reply_int(r, COMPONENT, "sweep heartbeat", &alive_now) < 0)
        return -1;
    if (alive_now == 1)
        return -2;
    const char *ka[] = {list, queue, claim_key, claim};
    r = redis_nodes_script(rn, &sc->s[SCRIPT_SWEEP_RECOVER], 3, 1, ka);
    int64_t n = 0;
    if (!r || redis_reply_int(r, COMPONENT, "sweep move", &n) < 0)
        return -1;
    return n;
}

/* What one sweep carries from list to list. */
typedef struct sweep_pass {
    redis_nodes *rn;
    const scripts *sc;
    const char *self_id;
    sweep_result *out;
} sweep_pass;

/* One processing list found by the scan: its worker's orders go back onto
 * the queue unless it is alive (or this worker). 0, or -1 on a Redis error. */
static int recover_list(void *ctx, const char *key, size_t len)
{
    sweep_pass *p = ctx;
    (void)len;
    int64_t item;
    const char *id;
    if (keys_parse_processing(key, &item, &id) < 0 || strcmp(id, p->self_id) == 0)
        return 0;
    long long moved = sweep_recover(p->rn, p->sc, item, id);
    if (moved == -1)
        return -1;
    if (moved <= 0)
        return 0; /* alive, or its list emptied meanwhile */
    log_msg(LOG_WARN, COMPONENT,
            "worker %s has no heartbeat: %lld orders of %s back onto item %" PRId64 "'s queue", id,
            moved, key, item);
    p->out->lists++;
    p->out->orders += moved;
    return 0;
}

int sweep_run(redis_nodes *rn, const scripts *sc, const char *self_id, sweep_result *out)
{
    memset(out, 0, sizeof(*out));
    sweep_pass p = {rn, sc, self_id, out};
    return redis_nodes_scan(rn, KEYS_PROCESSING_PATTERN, recover_list, &p) == 0 ? 0 : -1;
}
