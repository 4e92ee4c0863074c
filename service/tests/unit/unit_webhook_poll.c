/* unit_webhook_poll.c: the deliverer's one wait (webhook_poll.c) without a
 * server: a wait with nothing ready says so, and a wait whose epoll set is
 * broken says it failed (the deliverer then stops) rather than nothing
 * ready, which had the loop spin on it. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "config.h"
#include "webhooks.h"
#include "webhooks_state.h"

Test(webhook_poll, a_wait_on_a_broken_epoll_set_says_it_failed_not_that_nothing_was_ready)
{
    config cfg;
    char err[256];
    config_init(&cfg);
    free(cfg.webhook_endpoints);
    cfg.webhook_endpoints = strdup("http://127.0.0.1:9/hook whsec-unit-poll-0123456789");
    webhooks *w = webhooks_create(&cfg, err, sizeof(err));
    cr_assert_not_null(w, "%s", err);
    cr_assert_eq(webhook_poll_wait(w, 0), 0, "nothing ready");
    int p[2];
    cr_assert_eq(pipe(p), 0);
    cr_assert_geq(dup2(p[0], w->epfd), 0, "the set's fd now a pipe's, not an epoll set");
    cr_assert_eq(webhook_poll_wait(w, 0), WEBHOOK_POLL_FAILED);
    webhooks_free(w);
    close(p[0]);
    close(p[1]);
    config_free(&cfg);
}
