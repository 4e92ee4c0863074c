/* webhooks_main.c: seckill-webhooks: wires the config, the log, the stop
 * signals (a signalfd the deliverer polls with its sockets) and the metrics
 * listener to the deliverer (webhooks.h). */
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <curl/curl.h>

#include "config.h"
#include "log.h"
#include "metrics_http.h"
#include "webhooks.h"

#define PROGRAM "seckill-webhooks"

/* Loads the config and the log level. 0 (go on), 1 (exit 0: --help ...) or
 * 2 (exit 2: said why). */
static int load(config *cfg, int argc, char **argv)
{
    char err[CONFIG_ERRLEN];
    log_level level;
    config_init(cfg);
    switch (config_load(cfg, PROGRAM, argc, argv, stdout, err, sizeof(err))) {
    case CONFIG_OK:
        break;
    case CONFIG_EXIT:
        return 1;
    case CONFIG_ERROR:
        fprintf(stderr, PROGRAM ": %s\n", err);
        return 2;
    }
    if (log_parse_level(cfg->log_level, &level) < 0) {
        fprintf(stderr, PROGRAM ": log_level: unknown level '%s'\n", cfg->log_level);
        return 2;
    }
    log_set_level(level);
    return 0;
}

/* webhook_priority = idle: this thread, and those it starts after (the
 * /metrics listener too, so a scrape during a storm may wait), run under
 * SCHED_IDLE, on the CPU the purchase path leaves. Lowering one's own
 * policy needs no privilege, but a sandbox (a seccomp profile) may refuse
 * it: then deliveries go on at normal priority, with a warning, rather than
 * not at all. */
static void set_priority(const config *cfg)
{
    if (cfg->webhook_priority != CONFIG_WEBHOOK_PRIORITY_IDLE)
        return;
    struct sched_param none = {.sched_priority = 0};
    if (sched_setscheduler(0, SCHED_IDLE, &none) != 0)
        log_msg(LOG_WARN, "webhooks",
                "webhook_priority = idle: sched_setscheduler refused (%s); delivering at "
                "normal priority",
                strerror(errno));
}

int main(int argc, char **argv)
{
    config cfg;
    char err[CONFIG_ERRLEN];
    int loaded = load(&cfg, argc, argv);
    if (loaded != 0) {
        config_free(&cfg);
        return loaded == 1 ? 0 : 2;
    }
    /* A peer that closes mid-request is an error of that transfer. */
    signal(SIGPIPE, SIG_IGN);
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGTERM);
    sigaddset(&stop, SIGINT);
    int stop_fd = -1, code = 1;
    if (sigprocmask(SIG_BLOCK, &stop, NULL) != 0 || (stop_fd = signalfd(-1, &stop, 0)) < 0 ||
        curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        fprintf(stderr, PROGRAM ": cannot set up signals or libcurl\n");
        config_free(&cfg);
        return 1;
    }
    set_priority(&cfg);
    webhooks *w = webhooks_create(&cfg, err, sizeof(err));
    metrics_http *mh = NULL;
    if (!w) {
        log_msg(LOG_ERROR, "webhooks", "%s", err);
        code = 2;
    } else if (cfg.webhook_metrics_port > 0 &&
               !(mh = metrics_http_start(cfg.host, cfg.webhook_metrics_port, webhooks_metrics, w,
                                         err, sizeof(err)))) {
        log_msg(LOG_ERROR, "webhooks", "%s", err);
    } else {
        code = webhooks_run(w, stop_fd);
    }
    metrics_http_stop(mh);
    webhooks_free(w);
    curl_global_cleanup();
    close(stop_fd);
    config_free(&cfg);
    return code;
}
