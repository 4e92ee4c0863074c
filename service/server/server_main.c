/* server_main.c: seckill-server: reads the config, builds the app, plugs the
 * laboratory in (when built with it and lab = on), serves, waits for SIGINT or SIGTERM,
 * stops. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>

#include "api.h"
#include "app.h"
#include "config.h"
#include "log.h"
#include "room_admission.h"
#ifdef SECKILL_LAB
#include "lab.h" /* the one place that wires the laboratory in */
#endif

/* Every connection is a descriptor: a flash sale opens thousands at once, and
 * the usual soft limit of 1024 would refuse them long before max_connections.
 * The soft limit goes up to the hard one, which only root could raise. */
static void raise_fd_limit(int max_connections)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur >= rl.rlim_max)
        return;
    rlim_t was = rl.rlim_cur;
    rl.rlim_cur = rl.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &rl) != 0)
        return;
    if (rl.rlim_cur < (rlim_t)max_connections + 64)
        log_msg(LOG_WARN, "server",
                "open files limited to %llu: fewer than max_connections (%d) can be served",
                (unsigned long long)rl.rlim_cur, max_connections);
    else
        log_msg(LOG_DEBUG, "server", "open files limit raised from %llu to %llu",
                (unsigned long long)was, (unsigned long long)rl.rlim_cur);
}

int main(int argc, char **argv)
{
    config cfg;
    char err[512];
    int exit_code = config_start(&cfg, "seckill-server", argc, argv);
    if (exit_code >= 0)
        return exit_code;
    log_level level = LOG_INFO;
    log_parse_level(cfg.log_level, &level); /* config_start checked it */
    log_set_level(level);

    raise_fd_limit(cfg.max_connections);

    /* Block the stop signals in every thread; main takes them with sigwait. */
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGINT);
    sigaddset(&stop, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop, NULL);
    signal(SIGPIPE, SIG_IGN);

    app *a = app_create(&cfg, err, sizeof(err));
    int started = a != NULL;
#ifdef SECKILL_LAB
    /* Off (the default), nothing of the laboratory runs: no thread, no
     * connection, and its routes answer 404 lab_off (api.c). */
    if (started && cfg.lab) {
        log_msg(LOG_WARN, "server",
                "the oversell laboratory is on (lab = on): never in production");
        started = lab_plug(a, err, sizeof(err)) == 0;
    }
#endif
    started = started && app_start(a, api_handle, err, sizeof(err)) == 0;
    if (!started) {
        log_msg(LOG_ERROR, "server", "cannot start: %s", err);
        app_free(a);
        config_free(&cfg);
        return 1;
    }
    room_load_master(a); /* the key of admission tokens, before the first purchase brings one */
    log_msg(LOG_INFO, "server", "listening on http://%s:%d", cfg.host, cfg.port);
    int sig;
    sigwait(&stop, &sig);
    log_msg(LOG_INFO, "server", "signal %d: stopping", sig);
    app_free(a);
    config_free(&cfg);
    log_msg(LOG_INFO, "server", "stopped");
    return 0;
}
