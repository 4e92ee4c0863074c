/* http_loop.c: the loops of the HTTP front (the API: http_server.h): their
 * threads and daemons, the shared listening socket, the per-IP accept
 * policy, quiesce, drain and stop. One request is http_exchange.c's.
 *
 * Each loop thread owns one libmicrohttpd daemon in its external-event mode:
 * the daemon's epoll descriptor is one event of the thread's libevent loop,
 * and every call into the daemon (run, quiesce) is made on that thread. The
 * daemons share one listening socket. (libmicrohttpd's own thread pool
 * quiesces its workers from the calling thread, racing them for the listen
 * socket's epoll registration: 0.9.75 aborts when it loses.) Deferred
 * requests are suspended, so that a few threads serve thousands of
 * connections. */
#include "http_server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>

#include "clock.h"
#include "http_framing.h"
#include "http_loop.h"
#include "ip_count.h"
#include "log.h"

/* libmicrohttpd gives each connection a memory pool of this size for the
 * request line, headers and read and write buffers, and zeroes all of it
 * before every request of a keep-alive connection: at the default of 32 KiB
 * that memset was the largest user-space cost of a purchase. A purchase needs
 * well under 2 KiB; bodies are copied out as they arrive, so they need not
 * fit. Requests whose headers do not fit get 431 from libmicrohttpd. */
#define HTTP_CONNECTION_MEMORY 8192u
/* A drain stops waiting for connections that stayed idle this long. */
#define HTTP_IDLE_GRACE_MS 1000
#define HTTP_LISTEN_BACKLOG 4096

static void wake(http_loop *l);

/* The loop whose thread this is (NULL on other threads). */
static _Thread_local http_loop *current_loop;

/* The length of an address libmicrohttpd hands back (it keeps the bytes
 * accept() gave, as long as the family needs). */
static socklen_t address_len(const struct sockaddr *addr)
{
    return addr->sa_family == AF_INET6 ? (socklen_t)sizeof(struct sockaddr_in6)
                                       : (socklen_t)sizeof(struct sockaddr_in);
}

/* A connection counted by the accept policy is marked in its socket context
 * (with its loop), and its count given back when it closes. */
static void on_connection(void *cls, struct MHD_Connection *conn, void **socket_ctx,
                          enum MHD_ConnectionNotificationCode code)
{
    http_loop *l = cls;
    http_server *s = l->server;
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        atomic_fetch_add(&s->connections, 1);
        if (l->pending_len > 0) {
            *socket_ctx = l;
            l->pending_len = 0;
        }
    } else if (code == MHD_CONNECTION_NOTIFY_CLOSED) {
        atomic_fetch_sub(&s->connections, 1);
        const union MHD_ConnectionInfo *info =
            *socket_ctx ? MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS) : NULL;
        if (info && info->client_addr)
            ip_count_give(s->per_ip, info->client_addr, address_len(info->client_addr));
        *socket_ctx = NULL;
    }
}

/* The daemon dropped the connection it accepted last before it started
 * (out of memory): its count goes back. */
static void give_back_pending(http_loop *l)
{
    if (l->pending_len > 0) {
        ip_count_give(l->server->per_ip, (struct sockaddr *)&l->pending, l->pending_len);
        l->pending_len = 0;
    }
}

/* The per-IP limit, counted across every loop (each daemon would only see
 * its own connections). The connection starts right after this returns, on
 * the same thread, or is dropped. */
static enum MHD_Result on_accept(void *cls, const struct sockaddr *addr, socklen_t len)
{
    http_loop *l = cls;
    give_back_pending(l);
    if (!ip_count_take(l->server->per_ip, addr, len))
        return MHD_NO;
    if (len <= (socklen_t)sizeof(l->pending)) {
        memcpy(&l->pending, addr, (size_t)len);
        l->pending_len = len;
    }
    return MHD_YES;
}

static void on_mhd_log(void *cls, const char *fmt, va_list ap)
{
    char msg[512];
    (void)cls;
    vsnprintf(msg, sizeof(msg), fmt, ap);
    log_msg(LOG_WARN, "http", "%s", msg);
}

/* One turn of the daemon: whatever its descriptors, timeouts and resumed
 * connections have for it; then its next timeout is armed. */
static void run_daemon(http_loop *l)
{
    MHD_run(l->daemon);
    give_back_pending(l);
    MHD_UNSIGNED_LONG_LONG ms;
    if (MHD_get_timeout(l->daemon, &ms) == MHD_YES) {
        struct timeval tv = {(time_t)(ms / 1000), (suseconds_t)(ms % 1000) * 1000};
        evtimer_add(l->timer_ev, &tv);
    } else {
        evtimer_del(l->timer_ev);
    }
}

static void on_daemon_event(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    run_daemon(arg);
}

/* Resumes, quiesce and stop are asked from other threads and done here, on
 * the daemon's own thread. */
static void on_wake(evutil_socket_t fd, short what, void *arg)
{
    http_loop *l = arg;
    http_server *s = l->server;
    uint64_t n;
    (void)what;
    if (read(fd, &n, sizeof(n)) < 0 && errno != EAGAIN)
        log_msg(LOG_ERROR, "http", "eventfd read: %s", strerror(errno));
    /* Cleared before the run: a resume after this point rings again. */
    atomic_store(&l->woken, 0);
    if (atomic_load(&s->quiesce) && !l->quiesced) {
        MHD_quiesce_daemon(l->daemon);
        l->quiesced = 1;
        atomic_fetch_add(&s->quiesced, 1);
    }
    if (atomic_load(&s->stop)) {
        event_base_loopbreak(l->base);
        return;
    }
    run_daemon(l);
}

/* The hooks' stop, once: on the loop's thread after its loop ended (or on
 * the creating thread when the loop never ran). */
static void end_local(http_loop *l)
{
    http_server *s = l->server;
    if (l->local_made && s->hooks.stop) {
        l->local_made = 0;
        s->hooks.stop(s->hooks.ctx, l->index, l->local);
    }
}

/* Connections this thread resumed in the turn: one run of the daemon for
 * all of them, at the end of the turn, with no wake-up written. */
static void on_resume(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    run_daemon(arg);
}

static void *loop_main(void *arg)
{
    http_loop *l = arg;
    current_loop = l;
    run_daemon(l);
    event_base_loop(l->base, EVLOOP_NO_EXIT_ON_EMPTY);
    /* Before the daemon stops: what the loop's own part still holds is
     * answered now. */
    end_local(l);
    return NULL;
}

/* Makes the loop turn soon: to resume connections, quiesce or stop. Many
 * wake-ups before the loop turns cost one write. */
static void wake(http_loop *l)
{
    if (atomic_exchange(&l->woken, 1))
        return;
    uint64_t one = 1;
    ssize_t ignored = write(l->wake_fd, &one, sizeof(one));
    (void)ignored;
}

void http_loop_resumed(http_loop *l)
{
    if (current_loop == l)
        event_active(l->resume_ev, EV_TIMEOUT, 1);
    else
        wake(l);
}

/* The socket every loop accepts from. Made here rather than by each daemon
 * so that a port in use is an error, not a second listener. */
static int open_listener(const config *cfg, char *err, size_t errlen)
{
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons((uint16_t)cfg->port)};
    if (inet_pton(AF_INET, cfg->host, &addr.sin_addr) != 1) {
        snprintf(err, errlen, "host: '%s' is not an IPv4 address", cfg->host);
        return -1;
    }
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    int one = 1;
    if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) != 0 ||
        bind(fd, (struct sockaddr *)&addr, sizeof(addr)) != 0 ||
        listen(fd, HTTP_LISTEN_BACKLOG) != 0) {
        snprintf(err, errlen, "cannot listen on %s:%d: %s", cfg->host, cfg->port, strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    return fd;
}

static int loop_start(http_server *s, http_loop *l, const config *cfg, unsigned connection_limit,
                      char *err, size_t errlen)
{
    l->server = s;
    l->index = (int)(l - s->loops);
    l->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    l->base = event_base_new();
    if (l->wake_fd < 0 || !l->base) {
        snprintf(err, errlen, "HTTP loop: %s", strerror(errno));
        return -1;
    }
    unsigned flags = MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG;
    l->daemon = MHD_start_daemon(
        flags, 0, s->per_ip ? on_accept : NULL, l, http_exchange_on_request, l,
        MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, NULL, MHD_OPTION_LISTEN_SOCKET, s->listen_fd,
        MHD_OPTION_CONNECTION_LIMIT, connection_limit, MHD_OPTION_CONNECTION_TIMEOUT,
        (unsigned)cfg->connection_timeout_s, MHD_OPTION_CONNECTION_MEMORY_LIMIT,
        (size_t)HTTP_CONNECTION_MEMORY, MHD_OPTION_NOTIFY_COMPLETED, http_exchange_on_completed,
        NULL, MHD_OPTION_NOTIFY_CONNECTION, on_connection, l, MHD_OPTION_END);
    if (!l->daemon) {
        snprintf(err, errlen, "cannot start the HTTP daemon on %s:%d", cfg->host, cfg->port);
        return -1;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(l->daemon, MHD_DAEMON_INFO_EPOLL_FD);
    if (!info) {
        snprintf(err, errlen, "the HTTP daemon has no epoll descriptor");
        return -1;
    }
    l->mhd_ev = event_new(l->base, info->epoll_fd, EV_READ | EV_PERSIST, on_daemon_event, l);
    l->timer_ev = evtimer_new(l->base, on_daemon_event, l);
    l->wake_ev = event_new(l->base, l->wake_fd, EV_READ | EV_PERSIST, on_wake, l);
    l->resume_ev = event_new(l->base, -1, 0, on_resume, l);
    if (!l->mhd_ev || !l->timer_ev || !l->wake_ev || !l->resume_ev ||
        event_add(l->mhd_ev, NULL) < 0 || event_add(l->wake_ev, NULL) < 0) {
        snprintf(err, errlen, "HTTP loop: out of memory");
        return -1;
    }
    if (s->hooks.start) {
        l->local = s->hooks.start(s->hooks.ctx, l->index, l->base);
        if (!l->local) {
            snprintf(err, errlen, "HTTP loop %d: its own part could not start", l->index);
            return -1;
        }
        l->local_made = 1;
    }
    if (pthread_create(&l->thread, NULL, loop_main, l) != 0) {
        snprintf(err, errlen, "cannot start an HTTP loop thread");
        return -1;
    }
    l->thread_started = 1;
    return 0;
}

/* After its thread ended (or never began). */
static void loop_close(http_loop *l)
{
    end_local(l);
    if (l->daemon) {
        /* Quiesced, the daemon leaves the shared socket open for the rest. */
        if (!l->quiesced)
            MHD_quiesce_daemon(l->daemon);
        MHD_stop_daemon(l->daemon);
    }
    struct event *events[] = {l->mhd_ev, l->timer_ev, l->wake_ev, l->resume_ev};
    for (size_t i = 0; i < sizeof(events) / sizeof(events[0]); i++)
        if (events[i])
            event_free(events[i]);
    if (l->base)
        event_base_free(l->base);
    if (l->wake_fd >= 0)
        close(l->wake_fd);
}

int http_server_loop_count(const config *cfg)
{
    int n = cfg->http_threads > 0 ? cfg->http_threads : (int)sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n;
}

http_server *http_server_create(const config *cfg, http_handler handler, void *ctx,
                                const http_loop_hooks *hooks, char *err, size_t errlen)
{
    http_server *s = calloc(1, sizeof(*s));
    if (!s)
        goto out_of_memory;
    s->handler = handler;
    s->ctx = ctx;
    if (hooks)
        s->hooks = *hooks;
    s->listen_fd = -1;
    struct timespec now = clock_after(CLOCK_REALTIME, 0);
    s->id_prefix = (uint32_t)(now.tv_sec ^ ((uint64_t)getpid() << 16) ^ now.tv_nsec);
    s->max_body = (size_t)cfg->max_body_bytes;

    int n = http_server_loop_count(cfg);
    s->loops = calloc((size_t)n, sizeof(*s->loops));
    if (!s->loops)
        goto out_of_memory;
    for (int i = 0; i < n; i++)
        s->loops[i].wake_fd = -1;
    if (cfg->per_ip_connection_limit > 0 &&
        !(s->per_ip = ip_count_create((unsigned)cfg->per_ip_connection_limit)))
        goto out_of_memory;
    s->listen_fd = open_listener(cfg, err, errlen);
    if (s->listen_fd < 0)
        goto fail;
    /* The connection limit is shared out among the daemons, as
     * libmicrohttpd's own thread pool would. */
    unsigned limit = (unsigned)cfg->max_connections;
    for (; s->nloops < n; s->nloops++) {
        unsigned share = limit / (unsigned)n + ((unsigned)s->nloops < limit % (unsigned)n);
        if (loop_start(s, &s->loops[s->nloops], cfg, share, err, errlen) < 0) {
            s->nloops++; /* its parts are freed with the rest */
            goto fail;
        }
    }
    return s;
out_of_memory:
    snprintf(err, errlen, "out of memory");
fail:
    http_server_free(s); /* NULL too */
    return NULL;
}

void http_server_quiesce(http_server *s)
{
    if (!s || atomic_exchange(&s->quiesce, 1))
        return;
    for (int i = 0; i < s->nloops; i++)
        wake(&s->loops[i]);
    /* Each loop stops accepting on its own thread, in microseconds. Until
     * all have, the kernel would still complete handshakes into the backlog,
     * connections nobody will accept; shutdown() then makes it stop
     * listening, so clients are refused at once and go elsewhere (Linux).
     * Before that, a loop still accepting would spin on the shut socket. */
    for (int waited = 0; atomic_load(&s->quiesced) < s->nloops && waited < 1000; waited++)
        usleep(1000);
    shutdown(s->listen_fd, SHUT_RDWR);
}

int http_server_drain(http_server *s, int timeout_ms)
{
    if (!s)
        return 0;
    atomic_store(&s->draining, 1);
    /* A keep-alive connection that is idle now may carry a request already
     * on its way: closing it would cut that request without an answer. So
     * the drain waits for the connections themselves to close, which every
     * answer from now on asks for. Connections that stay idle through the
     * grace period (a browser's, a pool's spare) carry nothing in flight;
     * they are closed with the daemon, as at their idle timeout. */
    uint64_t seen = atomic_load(&s->begun);
    int quiet_ms = 0;
    for (int waited = 0; waited < timeout_ms; waited += 5) {
        int busy = atomic_load(&s->in_progress);
        if (busy == 0 && atomic_load(&s->connections) == 0)
            return 0;
        uint64_t begun = atomic_load(&s->begun);
        quiet_ms = (busy == 0 && begun == seen) ? quiet_ms + 5 : 0;
        seen = begun;
        if (quiet_ms >= HTTP_IDLE_GRACE_MS)
            return 0;
        usleep(5 * 1000);
    }
    return atomic_load(&s->in_progress);
}

void http_server_free(http_server *s)
{
    if (!s)
        return;
    atomic_store(&s->stop, 1);
    for (int i = 0; i < s->nloops; i++) {
        if (s->loops[i].thread_started) {
            wake(&s->loops[i]);
            pthread_join(s->loops[i].thread, NULL);
        }
    }
    for (int i = 0; i < s->nloops; i++)
        loop_close(&s->loops[i]);
    if (s->listen_fd >= 0)
        close(s->listen_fd);
    ip_count_free(s->per_ip);
    free(s->loops);
    free(s);
}

void http_server_observe(http_server *s, http_observer observer, void *ctx)
{
    s->observer = observer;
    s->observer_ctx = ctx;
}
