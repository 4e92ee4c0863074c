/* server_main.c: seckill-server: reads the config, builds the app, waits for
 * SIGINT or SIGTERM, stops. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>

#include "app.h"
#include "config.h"
#include "log.h"

int main(int argc, char **argv)
{
    config cfg;
    char err[512];
    config_init(&cfg);
    config_result cr = config_load(&cfg, "seckill-server", argc, argv, stdout, err, sizeof(err));
    if (cr != CONFIG_OK) {
        if (cr == CONFIG_ERROR)
            fprintf(stderr, "seckill-server: %s\n", err);
        config_free(&cfg);
        return cr == CONFIG_EXIT ? 0 : 2;
    }
    log_level level;
    if (log_parse_level(cfg.log_level, &level) < 0) {
        fprintf(stderr, "seckill-server: log_level: '%s' is not debug, info, warn or error\n",
                cfg.log_level);
        config_free(&cfg);
        return 2;
    }
    log_set_level(level);

    /* Block the stop signals in every thread; main takes them with sigwait. */
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGINT);
    sigaddset(&stop, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop, NULL);
    signal(SIGPIPE, SIG_IGN);

    app *a = app_create(&cfg, err, sizeof(err));
    if (!a) {
        log_msg(LOG_ERROR, "server", "cannot start: %s", err);
        config_free(&cfg);
        return 1;
    }
    log_msg(LOG_INFO, "server", "listening on http://%s:%d", cfg.host, cfg.port);
    int sig;
    sigwait(&stop, &sig);
    log_msg(LOG_INFO, "server", "signal %d: stopping", sig);
    app_free(a);
    config_free(&cfg);
    log_msg(LOG_INFO, "server", "stopped");
    return 0;
}
