/* webhook_poll.c: the deliverer's one wait, an epoll set: libcurl's sockets,
 * driven by curl_multi_socket_action, PostgreSQL's socket (the trigger's
 * NOTIFY) and the stop signals.
 *
 * libcurl says which of its sockets to watch, and for what, through the
 * socket callback, and when its next timeout falls through the timer
 * callback; it is then told of the sockets that are ready, one call each,
 * and of its timer when it falls due. curl_multi_perform and
 * curl_multi_poll, before, looked at the socket of every transfer in flight
 * on each call (about 8 polls a delivery, a fifth of the deliverer's CPU);
 * here a turn touches only what is ready. */
#include <errno.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "clock.h"
#include "log.h"
#include "webhooks_state.h"

/* Ready sockets read in one epoll_wait; more wait for the next turn. */
#define READY_MAX 64

/* What an entry of the set is, kept in it beside its fd (tag): a ready
 * entry is told by its kind, never by comparing fd numbers, which libpq and
 * libcurl may each close and the other be given again. */
enum { KIND_CURL, KIND_STOP, KIND_PG };

static uint64_t tag(int kind, int fd)
{
    return (uint64_t)kind << 32 | (uint32_t)fd;
}

/* libcurl's socket callback: s is to be watched for what (or no more). The
 * socket's pointer (curl_multi_assign) marks one already in the set. */
static int on_socket(CURL *easy, curl_socket_t s, int what, void *userp, void *socketp)
{
    webhooks *w = userp;
    (void)easy;
    if (what == CURL_POLL_REMOVE) {
        /* libcurl closes it next, which would drop it from the set too;
         * told now, before its number can be reused. */
        epoll_ctl(w->epfd, EPOLL_CTL_DEL, s, NULL);
        return 0;
    }
    struct epoll_event ev = {.events = ((what & CURL_POLL_IN) ? EPOLLIN : 0u) |
                                       ((what & CURL_POLL_OUT) ? EPOLLOUT : 0u),
                             .data.u64 = tag(KIND_CURL, s)};
    int op = socketp ? EPOLL_CTL_MOD : EPOLL_CTL_ADD;
    int rc = epoll_ctl(w->epfd, op, s, &ev);
    if (rc < 0 && (errno == EEXIST || errno == ENOENT))
        rc = epoll_ctl(w->epfd, errno == EEXIST ? EPOLL_CTL_MOD : EPOLL_CTL_ADD, s, &ev);
    if (rc < 0) {
        log_msg(LOG_WARN, COMPONENT, "epoll_ctl of a transfer's socket: %s", strerror(errno));
        return -1;
    }
    if (!socketp)
        curl_multi_assign(w->multi, s, w);
    return 0;
}

/* libcurl's timer callback: its next timeout in timeout_ms (-1: none). It
 * is run by the next wait, never from here (libcurl's rule). */
static int on_timer(CURLM *multi, long timeout_ms, void *userp)
{
    webhooks *w = userp;
    (void)multi;
    w->curl_due_ms = timeout_ms < 0 ? -1 : clock_mono_ms() + timeout_ms;
    return 0;
}

int webhook_poll_init(webhooks *w)
{
    w->pg_fd = -1;
    w->curl_due_ms = -1;
    if ((w->epfd = epoll_create1(EPOLL_CLOEXEC)) < 0)
        return -1;
    curl_multi_setopt(w->multi, CURLMOPT_SOCKETFUNCTION, on_socket);
    curl_multi_setopt(w->multi, CURLMOPT_SOCKETDATA, w);
    curl_multi_setopt(w->multi, CURLMOPT_TIMERFUNCTION, on_timer);
    curl_multi_setopt(w->multi, CURLMOPT_TIMERDATA, w);
    return 0;
}

void webhook_poll_close(webhooks *w)
{
    if (w->epfd >= 0)
        close(w->epfd);
    w->epfd = -1;
}

/* Adds fd, of kind, to the set, for reading. 0, or -1 when it could not. */
static int watch(webhooks *w, int kind, int fd)
{
    struct epoll_event ev = {.events = EPOLLIN, .data.u64 = tag(kind, fd)};
    if (epoll_ctl(w->epfd, EPOLL_CTL_ADD, fd, &ev) == 0)
        return 0;
    log_msg(LOG_WARN, COMPONENT, "epoll_ctl: %s", strerror(errno));
    return -1;
}

int webhook_poll_stop_fd(webhooks *w, int stop_fd)
{
    return watch(w, KIND_STOP, stop_fd);
}

void webhook_poll_unwatch(webhooks *w, int fd)
{
    epoll_ctl(w->epfd, EPOLL_CTL_DEL, fd, NULL);
}

int webhook_poll_pg(webhooks *w, int fd)
{
    if (w->pg_fd >= 0)
        epoll_ctl(w->epfd, EPOLL_CTL_DEL, w->pg_fd, NULL);
    w->pg_fd = -1;
    if (fd < 0)
        return 0;
    if (watch(w, KIND_PG, fd) < 0)
        return -1;
    w->pg_fd = fd;
    return 0;
}

/* What a ready socket is ready for, in libcurl's words. */
static int curl_mask(uint32_t events)
{
    return ((events & EPOLLIN) ? CURL_CSELECT_IN : 0) |
           ((events & EPOLLOUT) ? CURL_CSELECT_OUT : 0) |
           ((events & (EPOLLERR | EPOLLHUP)) ? CURL_CSELECT_ERR : 0);
}

int webhook_poll_wait(webhooks *w, int nap_ms)
{
    int64_t now = clock_mono_ms();
    if (w->curl_due_ms >= 0 && w->curl_due_ms - now < nap_ms)
        nap_ms = w->curl_due_ms <= now ? 0 : (int)(w->curl_due_ms - now);
    struct epoll_event ready[READY_MAX];
    int n = epoll_wait(w->epfd, ready, READY_MAX, nap_ms), got = 0, running;
    if (n < 0 && errno != EINTR) {
        /* Not a ready socket missed but the set itself (it would fail again
         * at once, every turn): the deliverer stops, for its supervisor to
         * start it again. */
        log_msg(LOG_ERROR, COMPONENT, "epoll_wait: %s", strerror(errno));
        return WEBHOOK_POLL_FAILED;
    }
    for (int i = 0; i < n; i++) {
        int kind = (int)(ready[i].data.u64 >> 32), fd = (int)(uint32_t)ready[i].data.u64;
        if (kind == KIND_STOP)
            got |= WEBHOOK_POLL_STOP;
        else if (kind == KIND_PG)
            got |= WEBHOOK_POLL_PG;
        else
            curl_multi_socket_action(w->multi, fd, curl_mask(ready[i].events), &running);
    }
    if (w->curl_due_ms >= 0 && clock_mono_ms() >= w->curl_due_ms) {
        w->curl_due_ms = -1;
        curl_multi_socket_action(w->multi, CURL_SOCKET_TIMEOUT, 0, &running);
    }
    return got;
}
