/* http_server.c: libmicrohttpd glue. Bodies are gathered up to a limit (413
 * past it), the handler is called once per request, and deferred requests
 * are suspended so that a few threads serve thousands of connections. */
#include "http_server.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <time.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <microhttpd.h>

#include "json_io.h"
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

struct http_server {
    struct MHD_Daemon *daemon;
    http_observer observer; /* told of every answer, may be NULL */
    void *observer_ctx;
    uint32_t id_prefix; /* request ids: prefix-sequence, unique across restarts */
    _Atomic uint64_t next_id;
    http_handler handler;
    void *ctx;
    size_t max_body;
    MHD_socket listen_fd;   /* after quiesce: closed only once the daemon stopped */
    atomic_int in_progress; /* requests read and not yet answered and sent */
    atomic_int connections; /* open client connections, idle ones included */
    _Atomic uint64_t begun; /* requests ever begun: a drain sees new ones come */
    atomic_int draining;    /* answers close their connection */
};

struct http_exchange {
    http_server *server;
    struct MHD_Connection *conn;
    const char *method;
    const char *path;
    char *body;
    size_t body_len;
    size_t body_cap;
    int too_large;
    int handled; /* the handler has seen it */
    /* Set on the HTTP thread before the exchange is handed to another one,
     * never written after: the replying thread only reads it. */
    int suspended;
    struct MHD_Response *response; /* set by reply, queued by MHD's thread */
    unsigned status;
    int tag;           /* the handler's label for the observer (a route), -1 none */
    int retry_after_s; /* > 0: sent as Retry-After */
    struct timespec started;
    char id[28]; /* X-Request-Id */
};

static int append_body(http_exchange *ex, const char *data, size_t len)
{
    if (ex->too_large || ex->body_len + len > ex->server->max_body) {
        ex->too_large = 1;
        return 0;
    }
    if (ex->body_len + len + 1 > ex->body_cap) {
        size_t cap = ex->body_cap ? ex->body_cap * 2 : 256;
        while (cap < ex->body_len + len + 1)
            cap *= 2;
        char *grown = realloc(ex->body, cap);
        if (!grown)
            return -1;
        ex->body = grown;
        ex->body_cap = cap;
    }
    memcpy(ex->body + ex->body_len, data, len);
    ex->body_len += len;
    ex->body[ex->body_len] = '\0';
    return 0;
}

/* Counts arguments whose key or value holds a NUL byte (%00 in the URL). */
static enum MHD_Result count_nul_argument(void *cls, enum MHD_ValueKind kind, const char *key,
                                          size_t key_size, const char *value, size_t value_size)
{
    (void)kind;
    if (strlen(key) != key_size || (value && strlen(value) != value_size))
        ++*(int *)cls;
    return MHD_YES;
}

/* A C string ends at the first NUL: "user_id=1%00x" would read as "1". No
 * handler could see such an argument whole, so the request is refused. */
static int has_nul_argument(struct MHD_Connection *conn)
{
    int n = 0;
    MHD_get_connection_values_n(conn, MHD_GET_ARGUMENT_KIND, count_nul_argument, &n);
    return n > 0;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_data_size, void **con_cls)
{
    http_server *s = cls;
    http_exchange *ex = *con_cls;
    (void)version;

    if (!ex) {
        ex = calloc(1, sizeof(*ex));
        if (!ex)
            return MHD_NO;
        ex->server = s;
        ex->conn = conn;
        ex->method = method;
        ex->path = url;
        ex->tag = -1;
        clock_gettime(CLOCK_MONOTONIC, &ex->started);
        snprintf(ex->id, sizeof(ex->id), "%08x-%" PRIx64, s->id_prefix,
                 atomic_fetch_add_explicit(&s->next_id, 1, memory_order_relaxed));
        *con_cls = ex;
        atomic_fetch_add(&s->in_progress, 1);
        atomic_fetch_add(&s->begun, 1);
        return MHD_YES;
    }
    if (*upload_data_size > 0) {
        if (append_body(ex, upload_data, *upload_data_size) < 0)
            return MHD_NO;
        *upload_data_size = 0;
        return MHD_YES;
    }
    if (!ex->handled) {
        ex->handled = 1;
        if (ex->too_large)
            http_exchange_reply_error(ex, SK_TOO_LARGE, "request body is too large");
        else if (has_nul_argument(conn))
            http_exchange_reply_error(ex, SK_INVALID, "a query argument holds a NUL byte");
        else
            s->handler(s->ctx, ex);
        /* Deferred: another thread owns the reply now and resumes us. */
        if (ex->suspended)
            return MHD_YES;
    }
    if (!ex->response)
        return MHD_NO; /* no memory for a response: close the connection */
    enum MHD_Result rc = MHD_queue_response(conn, ex->status, ex->response);
    MHD_destroy_response(ex->response);
    ex->response = NULL;
    return rc;
}

static void on_connection(void *cls, struct MHD_Connection *conn, void **socket_ctx,
                          enum MHD_ConnectionNotificationCode code)
{
    http_server *s = cls;
    (void)conn;
    (void)socket_ctx;
    if (code == MHD_CONNECTION_NOTIFY_STARTED)
        atomic_fetch_add(&s->connections, 1);
    else if (code == MHD_CONNECTION_NOTIFY_CLOSED)
        atomic_fetch_sub(&s->connections, 1);
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    http_exchange *ex = *con_cls;
    (void)cls;
    (void)conn;
    (void)toe;
    if (!ex)
        return;
    atomic_fetch_sub(&ex->server->in_progress, 1);
    if (ex->response)
        MHD_destroy_response(ex->response);
    free(ex->body);
    free(ex);
    *con_cls = NULL;
}

static void on_mhd_log(void *cls, const char *fmt, va_list ap)
{
    char msg[512];
    (void)cls;
    vsnprintf(msg, sizeof(msg), fmt, ap);
    log_msg(LOG_WARN, "http", "%s", msg);
}

http_server *http_server_create(const config *cfg, http_handler handler, void *ctx, char *err,
                                size_t errlen)
{
    http_server *s = calloc(1, sizeof(*s));
    if (!s) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    s->handler = handler;
    s->ctx = ctx;
    s->listen_fd = MHD_INVALID_SOCKET;
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    s->id_prefix = (uint32_t)(now.tv_sec ^ ((uint64_t)getpid() << 16) ^ now.tv_nsec);
    s->max_body = (size_t)cfg->max_body_bytes;

    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons((uint16_t)cfg->port)};
    if (inet_pton(AF_INET, cfg->host, &addr.sin_addr) != 1) {
        snprintf(err, errlen, "host: '%s' is not an IPv4 address", cfg->host);
        goto fail;
    }
    unsigned threads = cfg->http_threads > 0 ? (unsigned)cfg->http_threads
                                             : (unsigned)sysconf(_SC_NPROCESSORS_ONLN);
    if (threads < 1)
        threads = 1;
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME |
                     MHD_USE_ERROR_LOG;
    s->daemon = MHD_start_daemon(
        flags, 0, NULL, NULL, on_request, s, MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, NULL,
        MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&addr, MHD_OPTION_THREAD_POOL_SIZE, threads,
        MHD_OPTION_CONNECTION_LIMIT, (unsigned)cfg->max_connections, MHD_OPTION_CONNECTION_TIMEOUT,
        (unsigned)cfg->connection_timeout_s, MHD_OPTION_LISTEN_BACKLOG_SIZE, 4096u,
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)HTTP_CONNECTION_MEMORY,
        MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned)cfg->per_ip_connection_limit,
        MHD_OPTION_NOTIFY_COMPLETED, on_completed, NULL, MHD_OPTION_NOTIFY_CONNECTION,
        on_connection, s, MHD_OPTION_END);
    if (!s->daemon) {
        snprintf(err, errlen, "cannot listen on %s:%d (in use, or not allowed)", cfg->host,
                 cfg->port);
        goto fail;
    }
    return s;
fail:
    free(s);
    return NULL;
}

void http_server_quiesce(http_server *s)
{
    if (!s || !s->daemon || s->listen_fd != MHD_INVALID_SOCKET)
        return;
    /* The daemon's threads may still look at the socket: it is closed in
     * http_server_free(), after they stopped. Until then the kernel would
     * still complete handshakes into its backlog, connections nobody will
     * accept; shutdown() makes it stop listening, so clients are refused at
     * once and go elsewhere (Linux), while the descriptor stays valid. */
    s->listen_fd = MHD_quiesce_daemon(s->daemon);
    if (s->listen_fd != MHD_INVALID_SOCKET)
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
    if (s->daemon)
        MHD_stop_daemon(s->daemon);
    if (s->listen_fd != MHD_INVALID_SOCKET)
        close(s->listen_fd);
    free(s);
}

const char *http_exchange_method(const http_exchange *ex)
{
    return ex->method;
}

const char *http_exchange_path(const http_exchange *ex)
{
    return ex->path;
}

const char *http_exchange_body(const http_exchange *ex, size_t *len)
{
    *len = ex->body_len;
    return ex->body ? ex->body : "";
}

const char *http_exchange_query(const http_exchange *ex, const char *key)
{
    return MHD_lookup_connection_value(ex->conn, MHD_GET_ARGUMENT_KIND, key);
}

const char *http_exchange_header(const http_exchange *ex, const char *name)
{
    return MHD_lookup_connection_value(ex->conn, MHD_HEADER_KIND, name);
}

void http_exchange_defer(http_exchange *ex)
{
    ex->suspended = 1;
    MHD_suspend_connection(ex->conn);
}

void http_exchange_reply(http_exchange *ex, int status, const char *body, size_t len,
                         const char *allow)
{
    http_exchange_reply_typed(ex, status, body, len, "application/json", allow);
}

void http_exchange_reply_error_allow(http_exchange *ex, sk_status st, const char *message,
                                     const char *allow)
{
    char body[640];
    int n = json_io_error(body, sizeof(body), st, message ? message : sk_status_message(st));
    http_exchange_reply(ex, sk_status_http(st), body, n > 0 ? (size_t)n : 0, allow);
}

void http_exchange_reply_error(http_exchange *ex, sk_status st, const char *message)
{
    http_exchange_reply_error_allow(ex, st, message, NULL);
}

void http_exchange_reply_typed(http_exchange *ex, int status, const char *body, size_t len,
                               const char *content_type, const char *allow)
{
    struct MHD_Response *r =
        MHD_create_response_from_buffer(len, (void *)body, MHD_RESPMEM_MUST_COPY);
    if (r) {
        MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, content_type);
        if (allow)
            MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, allow);
        MHD_add_response_header(r, "X-Request-Id", ex->id);
        if (ex->retry_after_s > 0) {
            char seconds[16];
            snprintf(seconds, sizeof(seconds), "%d", ex->retry_after_s);
            MHD_add_response_header(r, MHD_HTTP_HEADER_RETRY_AFTER, seconds);
        }
        /* Stopping: the client learns it from this answer, not from a
         * connection cut under its next request. */
        if (atomic_load(&ex->server->draining))
            MHD_add_response_header(r, MHD_HTTP_HEADER_CONNECTION, "close");
    }
    ex->status = (unsigned)status;
    ex->response = r;
    http_server *s = ex->server;
    if (s->observer) {
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        double seconds = (double)(now.tv_sec - ex->started.tv_sec) +
                         (double)(now.tv_nsec - ex->started.tv_nsec) / 1e9;
        s->observer(s->observer_ctx, ex->tag, status, seconds, ex->method, ex->path, ex->id);
    }
    /* Last: once resumed, the HTTP thread may send and free the exchange. */
    if (ex->suspended)
        MHD_resume_connection(ex->conn);
}

void http_server_observe(http_server *s, http_observer observer, void *ctx)
{
    s->observer = observer;
    s->observer_ctx = ctx;
}

void http_exchange_retry_after(http_exchange *ex, int seconds)
{
    ex->retry_after_s = seconds;
}

void http_exchange_tag(http_exchange *ex, int tag)
{
    ex->tag = tag;
}
