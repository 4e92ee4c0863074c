/* http_exchange.c: one request and its answer. The body is gathered up to a
 * limit (413 past it), the framing and the query checked, the handler called
 * once; the answer carries the request's id, the headers asked for, and
 * Connection: close while the server drains; the observer hears of it with
 * the time taken. A deferred exchange's connection is suspended until its
 * answer, given on any thread, resumes it (http_loop_resumed). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "array.h"
#include "clock.h"
#include "http_framing.h"
#include "http_loop.h"
#include "json_io.h"

struct http_exchange {
    http_loop *loop; /* whose daemon holds the connection (and its server) */
    struct MHD_Connection *conn;
    const char *method;
    const char *path;
    char *body;
    size_t body_len;
    size_t body_cap;
    int too_large;
    int close;   /* the answer closes the connection */
    int handled; /* the handler has seen it */
    /* Set on the HTTP thread before the exchange is handed to another one,
     * never written after: the replying thread only reads it. */
    int suspended;
    struct MHD_Response *response; /* set by reply, queued by MHD's thread */
    unsigned status;
    int tag;           /* the handler's label for the observer (a route), -1 none */
    int retry_after_s; /* > 0: sent as Retry-After */
    /* More headers of the answer (http_exchange_add_header): name, value. */
    const char *extra[HTTP_EXCHANGE_HEADERS_MAX][2];
    int nextra;
    struct timespec started;
    char id[28]; /* X-Request-Id */
};

static int append_body(http_exchange *ex, const char *data, size_t len)
{
    if (ex->too_large || ex->body_len + len > ex->loop->server->max_body) {
        ex->too_large = 1;
        return 0;
    }
    char *grown = array_grow(ex->body, &ex->body_cap, ex->body_len + len + 1, 1, 256);
    if (!grown)
        return -1;
    ex->body = grown;
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

static enum MHD_Result note_header(void *cls, enum MHD_ValueKind kind, const char *key,
                                   size_t key_size, const char *value, size_t value_size)
{
    (void)kind;
    (void)value;
    (void)value_size;
    http_framing_note(cls, key, key_size);
    return MHD_YES;
}

/* NULL when the request's framing is sound (http_framing.h), else why not. */
static const char *framing_problem(struct MHD_Connection *conn, const char *version)
{
    http_framing f = {0};
    MHD_get_connection_values_n(conn, MHD_HEADER_KIND, note_header, &f);
    return http_framing_problem(&f, version);
}

/* Hands the answer the exchange holds to libmicrohttpd. */
static enum MHD_Result queue_reply(http_exchange *ex)
{
    if (!ex->response)
        return MHD_NO; /* no memory for a response: close the connection */
    enum MHD_Result rc = MHD_queue_response(ex->conn, ex->status, ex->response);
    MHD_destroy_response(ex->response);
    ex->response = NULL;
    return rc;
}

enum MHD_Result http_exchange_on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                         const char *method, const char *version,
                                         const char *upload_data, size_t *upload_data_size,
                                         void **con_cls)
{
    http_loop *l = cls;
    http_server *s = l->server;
    http_exchange *ex = *con_cls;

    if (!ex) {
        ex = calloc(1, sizeof(*ex));
        if (!ex)
            return MHD_NO;
        ex->loop = l;
        ex->conn = conn;
        ex->method = method;
        ex->path = url;
        ex->tag = -1;
        ex->started = clock_after(CLOCK_MONOTONIC, 0);
        snprintf(ex->id, sizeof(ex->id), "%08x-%" PRIx64, s->id_prefix,
                 atomic_fetch_add_explicit(&s->next_id, 1, memory_order_relaxed));
        *con_cls = ex;
        atomic_fetch_add(&s->in_progress, 1);
        atomic_fetch_add(&s->begun, 1);
        const char *problem = framing_problem(conn, version);
        if (!problem)
            return MHD_YES;
        /* Answered before the body is read: libmicrohttpd then reads no
         * more of this connection and closes it after the answer. */
        ex->handled = 1;
        ex->close = 1;
        http_exchange_reply_error(ex, SK_INVALID, problem);
        return queue_reply(ex);
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
    return queue_reply(ex);
}

void http_exchange_on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                                enum MHD_RequestTerminationCode toe)
{
    http_exchange *ex = *con_cls;
    (void)cls;
    (void)conn;
    (void)toe;
    if (!ex)
        return;
    atomic_fetch_sub(&ex->loop->server->in_progress, 1);
    if (ex->response)
        MHD_destroy_response(ex->response);
    free(ex->body);
    free(ex);
    *con_cls = NULL;
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

void http_exchange_reply_new(http_exchange *ex, int status, char *body)
{
    if (body)
        http_exchange_reply(ex, status, body, strlen(body), NULL);
    else
        http_exchange_reply_error(ex, SK_INTERNAL, "out of memory");
    free(body);
}

void http_exchange_reply_error_as(http_exchange *ex, int status, const char *code,
                                  const char *message, const char *allow)
{
    char body[640];
    int n = json_io_error_body(body, sizeof(body), code, message, NULL);
    http_exchange_reply(ex, status, body, n > 0 ? (size_t)n : 0, allow);
}

void http_exchange_reply_error_allow(http_exchange *ex, sk_status st, const char *message,
                                     const char *allow)
{
    http_exchange_reply_error_as(ex, sk_status_http(st), sk_status_code(st),
                                 message ? message : sk_status_message(st), allow);
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
        if (content_type)
            MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, content_type);
        for (int i = 0; i < ex->nextra; i++)
            MHD_add_response_header(r, ex->extra[i][0], ex->extra[i][1]);
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
        if (ex->close || atomic_load(&ex->loop->server->draining))
            MHD_add_response_header(r, MHD_HTTP_HEADER_CONNECTION, "close");
    }
    ex->status = (unsigned)status;
    ex->response = r;
    http_server *s = ex->loop->server;
    if (s->observer) {
        double seconds = clock_seconds_between(ex->started, clock_after(CLOCK_MONOTONIC, 0));
        s->observer(s->observer_ctx, ex->tag, status, seconds, ex->method, ex->path, ex->id);
    }
    /* Last: once resumed, the HTTP thread may send and free the exchange, so
     * its loop is read before. In external-event mode libmicrohttpd does not
     * wake its loop itself. */
    if (ex->suspended) {
        http_loop *l = ex->loop;
        MHD_resume_connection(ex->conn);
        http_loop_resumed(l);
    }
}

void *http_exchange_loop_local(const http_exchange *ex)
{
    return ex->loop->local;
}

void http_exchange_retry_after(http_exchange *ex, int seconds)
{
    ex->retry_after_s = seconds;
}

int http_exchange_add_header(http_exchange *ex, const char *name, const char *value)
{
    if (ex->nextra == HTTP_EXCHANGE_HEADERS_MAX)
        return -1;
    ex->extra[ex->nextra][0] = name;
    ex->extra[ex->nextra][1] = value;
    ex->nextra++;
    return 0;
}

void http_exchange_tag(http_exchange *ex, int tag)
{
    ex->tag = tag;
}
