/* worker_chores.c: the heartbeat, the sweep, the expiry and the draw chore,
 * each when due. */
#include "worker_chores.h"

#include <inttypes.h>

#include "clock.h"
#include "expiry.h"
#include "keys.h"
#include "log.h"
#include "sweep.h"
#include "waitlist.h"
#include "worker_conn.h"

#define COMPONENT "worker"

/* Every worker_expiry_ms, a try for the expiry lock, then the expiry pass
 * if elected. A PostgreSQL failure, or a return Redis refused or lost, waits
 * for the next period (the deadlines and the returns owed stay in
 * PostgreSQL); a node's connection lost meanwhile is remade by its next
 * command (redis_nodes.h), and the queue's calls judge their own replies.
 * Returns 0, or -1 when the election failed. */
static int worker_expire(worker *w, int64_t now)
{
    if (w->cfg->worker_expiry_ms == 0 || now < w->next_expiry)
        return 0;
    w->next_expiry = now + w->cfg->worker_expiry_ms;
    int rc = sweep_elect(w->redis, KEYS_EXPIRY_LOCK, w->token, w->cfg->worker_expiry_ms);
    if (rc <= 0)
        return rc;
    if (!w->pg && worker_conn_pg_connect(w) < 0) {
        w->stats.pg_errors++;
        return 0;
    }
    expiry_result res;
    rc = expiry_run(w->redis, w->pg, &w->sc, &res);
    w->stats.expiries++;
    w->stats.expired += res.expired;
    w->stats.returned += res.units;
    if (rc == -2) {
        w->stats.pg_errors++;
        worker_conn_pg_drop(w);
        return 0;
    }
    if (rc < 0)
        log_msg(LOG_WARN, COMPONENT, "expiry: a return failed; it stays owed for the next pass");
    return 0;
}

/* Every WAITLIST_PERIOD_MS, the draw chore (waitlist.h), on every worker:
 * each item's row lock, not an election, keeps two workers from serving a
 * unit twice. A PostgreSQL failure drops the connection; what Redis failed
 * waits for the next period (the grants owed stay in PostgreSQL). */
static void worker_waitlist(worker *w, int64_t now)
{
    if (now < w->next_waitlist)
        return;
    w->next_waitlist = now + WAITLIST_PERIOD_MS;
    if (!w->pg && worker_conn_pg_connect(w) < 0) {
        w->stats.pg_errors++;
        return;
    }
    waitlist_result res;
    int rc = waitlist_run(&w->wl, w->redis, w->pg, &w->sc, &res);
    w->stats.drawn_served += res.served;
    w->stats.drawn_units += res.units;
    if (rc == -2) {
        w->stats.pg_errors++;
        worker_conn_pg_drop(w);
    }
}

/* The times of the sweep's election are logged so that a test can check
 * that no two sweeps shared a period. */
int worker_chores_run(worker *w)
{
    int64_t now = clock_mono_ms();
    if (now >= w->next_beat) {
        int rc = worker_conn_heartbeat(w, 0);
        if (rc < 0)
            return rc;
    }
    if (worker_expire(w, now) < 0)
        return -1;
    worker_waitlist(w, now);
    if (w->cfg->worker_sweep_ms == 0 || now < w->next_sweep)
        return 0;
    w->next_sweep = now + w->cfg->worker_sweep_ms;
    int64_t asked = clock_wall_ms();
    int rc = sweep_elect(w->redis, KEYS_SWEEP_LOCK, w->token, w->cfg->worker_sweep_ms);
    if (rc <= 0)
        return rc;
    log_msg(LOG_DEBUG, COMPONENT,
            "sweep: elected for %d ms (asked at %" PRId64 ", answered at %" PRId64 ")",
            w->cfg->worker_sweep_ms, asked, clock_wall_ms());
    sweep_result res;
    rc = sweep_run(w->redis, &w->sc, w->cfg->worker_id, &res);
    w->stats.sweeps++;
    w->stats.swept_lists += res.lists;
    w->stats.swept_orders += res.orders;
    return rc;
}
