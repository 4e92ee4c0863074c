/* worker_chores.h: what a worker does besides moving orders, once per turn
 * of its loop when due: the heartbeat's refresh, and the periodic jobs one
 * worker runs for all, each elected by its own Redis lock (sweep_elect):
 * the recovery sweep (sweep.h) and the expiry of unpaid orders (expiry.h);
 * and the draw chore (waitlist.h), which every worker runs. */
#ifndef SECKILL_WORKER_CHORES_H
#define SECKILL_WORKER_CHORES_H

#include "worker_state.h"

/* The chores of a turn of the loop, through w->redis: the heartbeat when
 * due, the expiry when due, the draw chore when due, and every
 * worker_sweep_ms a try for the sweep lock, then the sweep if elected;
 * counted into w->stats. Returns 0, -1 on a Redis error, -2 when another
 * worker took the id. */
int worker_chores_run(worker *w);

#endif
