/* worker_main.c: seckill-worker: wires the config, the log and the stop
 * signals to the worker module. */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "log.h"
#include "metrics_http.h"
#include "worker.h"

/* SIGTERM and SIGINT are blocked in every thread and taken by this one with
 * sigwait(), which sets the flag the worker polls: no handler, hence no
 * global for a handler to write to. */
typedef struct signal_waiter {
    sigset_t set;
    atomic_int stop;
} signal_waiter;

static void *wait_for_signal(void *arg)
{
    signal_waiter *sw = arg;
    int sig = 0;
    if (sigwait(&sw->set, &sig) == 0 && !atomic_load(&sw->stop))
        log_msg(LOG_INFO, "worker", "%s received, stopping after the current batch",
                strsignal(sig));
    atomic_store(&sw->stop, 1);
    return NULL;
}

/* GET /metrics of the worker: its counters, with its id as the label. */
static char *render_metrics(void *ctx)
{
    worker *w = ctx;
    metrics_worker m;
    worker_read_metrics(w, &m);
    return metrics_render_worker(worker_id_of(w), &m);
}

int main(int argc, char **argv)
{
    config cfg;
    char err[CONFIG_ERRLEN];
    log_level level = LOG_INFO;
    signal_waiter sw;
    pthread_t waiter;
    worker *w = NULL;
    int code = 1;

    int started = config_start(&cfg, "seckill-worker", argc, argv);
    if (started >= 0)
        return started;
    log_parse_level(cfg.log_level, &level); /* config_start checked it */
    log_set_level(level);

    /* hiredis writes to sockets without MSG_NOSIGNAL: a Redis that went away
     * must be an error to handle, not a SIGPIPE that kills the process. */
    signal(SIGPIPE, SIG_IGN);
    sigemptyset(&sw.set);
    sigaddset(&sw.set, SIGTERM);
    sigaddset(&sw.set, SIGINT);
    atomic_init(&sw.stop, 0);
    if (pthread_sigmask(SIG_BLOCK, &sw.set, NULL) != 0 ||
        pthread_create(&waiter, NULL, wait_for_signal, &sw) != 0) {
        fprintf(stderr, "seckill-worker: cannot set up the signal thread\n");
        goto done;
    }

    w = worker_create(&cfg, err, sizeof(err));
    metrics_http *mh = NULL;
    if (w && cfg.worker_metrics_port > 0) {
        mh = metrics_http_start(cfg.host, cfg.worker_metrics_port, render_metrics, w, err,
                                sizeof(err));
        if (!mh)
            log_msg(LOG_ERROR, "worker", "%s", err);
    }
    if (w && (mh || cfg.worker_metrics_port == 0)) {
        /* 2: the id is another live worker's, a configuration error. */
        code = worker_run(w, &sw.stop) == 0 ? 0 : 2;
    } else if (!w) {
        log_msg(LOG_ERROR, "worker", "%s", err);
    }
    metrics_http_stop(mh);
    /* The waiter is still in sigwait() when the worker ended on its own. */
    if (!atomic_load(&sw.stop)) {
        atomic_store(&sw.stop, 1);
        pthread_kill(waiter, SIGTERM);
    }
    pthread_join(waiter, NULL);
done:
    worker_free(w);
    config_free(&cfg);
    return code;
}
