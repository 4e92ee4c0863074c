/* unit_blast.c: the load client of the end-to-end tests against a tiny HTTP
 * server in a thread of the test (whole, split, byte-by-byte and pipelined
 * answers, closes, drops, hangs), and its parser fed with bytes. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "blast.h"

/* ---- a tiny HTTP server ----
 * Request paths are "/<kind>/<index>"; the answer depends on kind:
 *   ok        200, body "<index>"        sNNN    status NNN, body "<index>"
 *   close     200 + Connection: close    eof     200 without length, then close
 *   chunked   200, chunked "<index>"     big     200, "<index>:" + 100 KB of 'x'
 *   continue  100 Continue, then 200     empty   204, no body
 *   drop      closes without answering   hang    never answers again
 *   garbage   bytes that are not HTTP
 * HEAD gets the GET headers (with Content-Length) and no body. */

typedef enum { SEND_WHOLE, SEND_SPLIT, SEND_BYTES } send_mode;

#define MAX_CONNS 256
#define BIG_BODY 100000

typedef struct test_server {
    int listen_fd;
    int port;
    send_mode mode;
    int batch; /* answer all complete requests of one read with one write */
    atomic_int stop;
    atomic_int accepted;
    atomic_int max_batch; /* most responses sent in one write */
    pthread_t acceptor;
    pthread_mutex_t mu;
    pthread_t conns[MAX_CONNS];
    int nconns;
} test_server;

typedef struct conn_arg {
    test_server *srv;
    int fd;
} conn_arg;

typedef struct outbuf {
    char *data;
    size_t len, cap;
} outbuf;

/* Server threads do not assert (Criterion asserts belong to the test's own
 * thread): running out of memory here just ends the test process. */
static void out_append(outbuf *o, const char *data, size_t len)
{
    if (o->len + len > o->cap) {
        o->cap = (o->len + len) * 2;
        o->data = realloc(o->data, o->cap);
        if (!o->data)
            abort();
    }
    memcpy(o->data + o->len, data, len);
    o->len += len;
}

__attribute__((format(printf, 2, 3))) static void out_fmt(outbuf *o, const char *fmt, ...)
{
    char tmp[512];
    va_list ap;
    va_start(ap, fmt);
    int len = vsnprintf(tmp, sizeof(tmp), fmt, ap);
    va_end(ap);
    out_append(o, tmp, (size_t)len);
}

/* Sends all of data the way the server's mode says; errors end quietly (the
 * client may have gone). */
static void server_send(test_server *srv, int fd, const char *data, size_t len)
{
    size_t piece = srv->mode == SEND_BYTES ? 1 : srv->mode == SEND_SPLIT ? 7 : len;
    for (size_t off = 0; off < len;) {
        size_t n = len - off < piece ? len - off : piece;
        ssize_t w = send(fd, data + off, n, MSG_NOSIGNAL);
        if (w <= 0)
            return;
        off += (size_t)w;
        if (srv->mode != SEND_WHOLE && off < len)
            usleep(srv->mode == SEND_BYTES ? 200 : 500);
    }
}

typedef enum { ACT_NONE, ACT_CLOSE, ACT_HANG } action;

/* Appends the answer to one request to o. */
static action answer(const char *method, const char *kind, const char *index, outbuf *o)
{
    int head = strcmp(method, "HEAD") == 0;
    size_t ilen = strlen(index);
    if (strcmp(kind, "drop") == 0)
        return ACT_CLOSE;
    if (strcmp(kind, "hang") == 0)
        return ACT_HANG;
    if (strcmp(kind, "garbage") == 0) {
        out_append(o, "SPDY/9 what\r\n\r\n", 15);
        return ACT_NONE;
    }
    if (strcmp(kind, "empty") == 0) {
        out_append(o, "HTTP/1.1 204 No Content\r\n\r\n", 27);
        return ACT_NONE;
    }
    if (strcmp(kind, "eof") == 0) {
        out_fmt(o, "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n%s", head ? "" : index);
        return ACT_CLOSE;
    }
    if (strcmp(kind, "chunked") == 0) {
        /* Two chunks, one with an extension, and a trailer. */
        out_fmt(o, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1;ext=1\r\n%c\r\n",
                index[0]);
        if (ilen > 1) /* a chunk of size 0 would end the body early */
            out_fmt(o, "%zx\r\n%s\r\n", ilen - 1, index + 1);
        out_fmt(o, "0\r\nX-Trailer: t\r\n\r\n");
        return ACT_NONE;
    }
    if (strcmp(kind, "continue") == 0)
        out_append(o, "HTTP/1.1 100 Continue\r\n\r\n", 25);
    if (strcmp(kind, "big") == 0) {
        size_t len = ilen + 1 + BIG_BODY;
        out_fmt(o, "HTTP/1.1 200 OK\r\nContent-Length: %zu\r\n\r\n", len);
        if (head)
            return ACT_NONE;
        out_append(o, index, ilen);
        out_append(o, ":", 1);
        char pad[1000];
        memset(pad, 'x', sizeof(pad));
        for (size_t i = 0; i < BIG_BODY; i += sizeof(pad))
            out_append(o, pad, sizeof(pad));
        return ACT_NONE;
    }
    int status = 200;
    if (kind[0] == 's')
        status = atoi(kind + 1);
    int close = strcmp(kind, "close") == 0;
    out_fmt(o,
            "HTTP/1.1 %d Whatever\r\nContent-Type: text/plain\r\n%sContent-Length: %zu\r\n\r\n%s",
            status, close ? "Connection: close\r\n" : "", ilen, head ? "" : index);
    return close ? ACT_CLOSE : ACT_NONE;
}

/* Parses one request at buf; returns its length, 0 when incomplete. A request
 * that is not "METHOD /kind/index" is answered as kind "garbage". */
static size_t parse_request(const char *buf, size_t len, char *method, char *kind, char *index)
{
    const char *end = memmem(buf, len, "\r\n\r\n", 4);
    if (!end)
        return 0;
    size_t head_len = (size_t)(end - buf) + 4;
    size_t body = 0;
    for (const char *p = buf; p < end; p++) {
        if ((p == buf || p[-1] == '\n') && strncasecmp(p, "content-length:", 15) == 0)
            body = strtoul(p + 15, NULL, 10);
    }
    if (len < head_len + body)
        return 0;
    if (sscanf(buf, "%15s /%31[^/]/%31[0-9]", method, kind, index) != 3)
        strcpy(kind, "garbage");
    return head_len + body;
}

static void *conn_main(void *arg)
{
    conn_arg *ca = arg;
    test_server *srv = ca->srv;
    int fd = ca->fd;
    free(ca);
    size_t in_cap = 65536, in_len = 0;
    char *in = malloc(in_cap);
    if (!in)
        abort();
    outbuf o = {0};
    int hang = 0;
    while (!atomic_load(&srv->stop)) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, 50) <= 0)
            continue;
        ssize_t n = recv(fd, in + in_len, in_cap - in_len, 0);
        if (n <= 0)
            break;
        in_len += (size_t)n;
        if (hang) {
            in_len = 0;
            continue;
        }
        size_t off = 0;
        int end_conn = 0, batched = 0;
        for (;;) {
            char method[16], kind[32], index[32];
            size_t used = parse_request(in + off, in_len - off, method, kind, index);
            if (!used)
                break;
            off += used;
            action a = answer(method, kind, index, &o);
            batched++;
            if (!srv->batch || a != ACT_NONE) {
                server_send(srv, fd, o.data, o.len);
                o.len = 0;
            }
            if (a == ACT_HANG)
                hang = 1;
            if (a == ACT_CLOSE)
                end_conn = 1;
            if (a != ACT_NONE)
                break;
        }
        memmove(in, in + off, in_len - off);
        in_len -= off;
        if (o.len) {
            server_send(srv, fd, o.data, o.len);
            o.len = 0;
            int prev = atomic_load(&srv->max_batch);
            while (batched > prev && !atomic_compare_exchange_weak(&srv->max_batch, &prev, batched))
                ;
        }
        if (end_conn)
            break;
    }
    free(o.data);
    free(in);
    close(fd);
    return NULL;
}

static void *acceptor_main(void *arg)
{
    test_server *srv = arg;
    while (!atomic_load(&srv->stop)) {
        struct pollfd p = {.fd = srv->listen_fd, .events = POLLIN};
        if (poll(&p, 1, 50) <= 0)
            continue;
        int fd = accept(srv->listen_fd, NULL, NULL);
        if (fd < 0)
            continue;
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        atomic_fetch_add(&srv->accepted, 1);
        conn_arg *ca = malloc(sizeof(*ca));
        *ca = (conn_arg){srv, fd};
        pthread_mutex_lock(&srv->mu);
        if (srv->nconns < MAX_CONNS &&
            pthread_create(&srv->conns[srv->nconns], NULL, conn_main, ca) == 0) {
            srv->nconns++;
        } else {
            close(fd);
            free(ca);
        }
        pthread_mutex_unlock(&srv->mu);
    }
    return NULL;
}

static void server_start(test_server *srv, send_mode mode, int batch)
{
    memset(srv, 0, sizeof(*srv));
    srv->mode = mode;
    srv->batch = batch;
    pthread_mutex_init(&srv->mu, NULL);
    srv->listen_fd = socket(AF_INET, SOCK_STREAM, 0);
    cr_assert(srv->listen_fd >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(a);
    cr_assert_eq(bind(srv->listen_fd, (struct sockaddr *)&a, sizeof(a)), 0);
    cr_assert_eq(listen(srv->listen_fd, 512), 0);
    cr_assert_eq(getsockname(srv->listen_fd, (struct sockaddr *)&a, &len), 0);
    srv->port = ntohs(a.sin_port);
    cr_assert_eq(pthread_create(&srv->acceptor, NULL, acceptor_main, srv), 0);
}

static void server_stop(test_server *srv)
{
    atomic_store(&srv->stop, 1);
    pthread_join(srv->acceptor, NULL);
    for (int i = 0; i < srv->nconns; i++)
        pthread_join(srv->conns[i], NULL);
    close(srv->listen_fd);
    pthread_mutex_destroy(&srv->mu);
}

/* ---- the client side ---- */

#define MAX_REQUESTS 5000

typedef struct client {
    const char *const *kinds; /* request i is kinds[i % nkinds]: "METHOD /kind" */
    size_t nkinds;
    size_t fail_build_at;     /* build returns 0 for this index (SIZE_MAX: never) */
    int status[MAX_REQUESTS]; /* -1 until answered */
    int calls[MAX_REQUESTS];
    int bad_bodies;
    int repeated;
} client;

static void client_init(client *c, const char *const *kinds, size_t nkinds)
{
    memset(c, 0, sizeof(*c));
    c->kinds = kinds;
    c->nkinds = nkinds;
    c->fail_build_at = (size_t)-1;
    for (size_t i = 0; i < MAX_REQUESTS; i++)
        c->status[i] = -1;
}

static size_t build(void *ctx, size_t index, char *buf, size_t cap)
{
    client *c = ctx;
    if (index == c->fail_build_at)
        return 0;
    const char *kind = c->kinds[index % c->nkinds];
    int n;
    if (strncmp(kind, "POST ", 5) == 0) {
        char body[64];
        int blen = snprintf(body, sizeof(body), "{\"user_id\":%zu}", index + 1);
        n = snprintf(buf, cap,
                     "%s/%zu HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                     "Content-Length: %d\r\n\r\n%s",
                     kind, index, blen, body);
    } else {
        n = snprintf(buf, cap, "%s/%zu HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", kind, index);
    }
    return n < 0 || (size_t)n >= cap ? 0 : (size_t)n;
}

static void on_response(void *ctx, size_t index, int status, const char *body, size_t len)
{
    client *c = ctx;
    if (index >= MAX_REQUESTS)
        return;
    if (c->calls[index]++)
        c->repeated++;
    c->status[index] = status;
    if (status == 0)
        return;
    const char *kind = c->kinds[index % c->nkinds];
    char want[32];
    snprintf(want, sizeof(want), "%zu", index);
    if (strncmp(kind, "HEAD ", 5) == 0 || strstr(kind, "/empty")) {
        if (len != 0)
            c->bad_bodies++;
    } else if (strstr(kind, "/big")) {
        if (len != strlen(want) + 1 + BIG_BODY || strncmp(body, want, strlen(want)) != 0 ||
            body[len - 1] != 'x')
            c->bad_bodies++;
    } else if (len != strlen(want) || strcmp(body, want) != 0) {
        c->bad_bodies++;
    }
    if (body[len] != '\0')
        c->bad_bodies++;
}

static blast_spec spec_for(test_server *srv, client *c, size_t connections, size_t requests)
{
    return (blast_spec){.port = srv->port,
                        .connections = connections,
                        .requests = requests,
                        .timeout_ms = 15000,
                        .build = build,
                        .on_response = on_response,
                        .ctx = c};
}

/* Every request got exactly one callback with status want_status (0: any). */
static void expect_all_answered(client *c, const blast_result *r, size_t n)
{
    cr_assert_eq(r->responses, n, "%zu of %zu answered: %s", r->responses, n, r->errstr);
    cr_assert_eq(r->missing, 0);
    cr_assert_eq(r->lost, 0);
    cr_assert_eq(r->transport_errors, 0, "%s", r->errstr);
    cr_assert_eq(r->timed_out, 0);
    cr_assert_eq(c->repeated, 0);
    cr_assert_eq(c->bad_bodies, 0, "%d responses had the wrong body", c->bad_bodies);
    for (size_t i = 0; i < n; i++)
        cr_assert_eq(c->calls[i], 1, "request %zu: %d callbacks", i, c->calls[i]);
}

TestSuite(blast, .timeout = 30);

Test(blast, every_request_is_answered_over_keep_alive_connections)
{
    static const char *const kinds[] = {"GET /ok"};
    static client c;
    test_server srv;
    blast_result r;
    server_start(&srv, SEND_WHOLE, 0);
    client_init(&c, kinds, 1);
    blast_spec spec = spec_for(&srv, &c, 4, 400);
    cr_assert_eq(blast_run(&spec, &r), 0, "%s", r.errstr);
    server_stop(&srv);
    expect_all_answered(&c, &r, 400);
    cr_assert_eq(blast_count(&r, 200), 400);
    cr_assert_eq(r.connects, 4, "keep-alive: no reconnects");
    cr_assert_eq(atomic_load(&srv.accepted), 4);
    cr_assert_geq(r.elapsed_ms, 0);
}

Test(blast, responses_are_counted_by_status)
{
    static const char *const kinds[] = {"POST /s202", "POST /s409", "POST /s409",
                                        "GET /s404",  "POST /s429", "GET /s503"};
    static client c;
    test_server srv;
    blast_result r;
    server_start(&srv, SEND_WHOLE, 0);
    client_init(&c, kinds, 6);
    blast_spec spec = spec_for(&srv, &c, 5, 600);
    cr_assert_eq(blast_run(&spec, &r), 0, "%s", r.errstr);
    server_stop(&srv);
    expect_all_answered(&c, &r, 600);
    cr_assert_eq(blast_count(&r, 202), 100);
    cr_assert_eq(blast_count(&r, 409), 200);
    cr_assert_eq(blast_count(&r, 404), 100);
    cr_assert_eq(blast_count(&r, 429), 100);
    cr_assert_eq(blast_count(&r, 503), 100);
    cr_assert_eq(blast_count(&r, 200), 0);
    cr_assert_eq(blast_count(&r, 0), 0);
    cr_assert_eq(blast_count(&r, 600), 0);
    for (size_t i = 0; i < 600; i++)
        cr_assert_eq(c.status[i], atoi(kinds[i % 6] + (kinds[i % 6][0] == 'P' ? 7 : 6)),
                     "request %zu got %d", i, c.status[i]);
}

Test(blast, responses_split_across_writes_are_reassembled)
{
    static const char *const kinds[] = {"POST /ok", "GET /s409", "GET /chunked"};
    static client c;
    test_server srv;
    blast_result r;
    server_start(&srv, SEND_SPLIT, 0);
    client_init(&c, kinds, 3);
    blast_spec spec = spec_for(&srv, &c, 3, 60);
    cr_assert_eq(blast_run(&spec, &r), 0, "%s", r.errstr);
    server_stop(&srv);
    expect_all_answered(&c, &r, 60);
    cr_assert_eq(blast_count(&r, 200), 40);
    cr_assert_eq(blast_count(&r, 409), 20);
}

Test(blast, responses_sent_one_byte_at_a_time_are_reassembled)
{
    static const char *const kinds[] = {"GET /ok", "GET /chunked", "HEAD /ok", "GET /empty"};
    static client c;
    test_server srv;
    blast_result r;
    server_start(&srv, SEND_BYTES, 0);
    client_init(&c, kinds, 4);
    blast_spec spec = spec_for(&srv, &c, 2, 12);
    cr_assert_eq(blast_run(&spec, &r), 0, "%s", r.errstr);
    server_stop(&srv);
    expect_all_answered(&c, &r, 12);
    cr_assert_eq(blast_count(&r, 204), 3);
}

Test(blast, pipelined_responses_arriving_in_one_read_are_all_parsed)
{
    static const char *const kinds[] = {"GET /ok",      "POST /s202",    "HEAD /ok", "GET /empty",
                                        "GET /chunked", "GET /continue", "GET /s409"};
    static client c;
    test_server srv;
    blast_result r;
    server_start(&srv, SEND_WHOLE, 1);
    client_init(&c, kinds, 7);
    blast_spec spec = spec_for(&srv, &c, 2, 700);
    spec.pipeline = 8;
    cr_assert_eq(blast_run(&spec, &r), 0, "%s", r.errstr);
    server_stop(&srv);
    expect_all_answered(&c, &r, 700);
    cr_assert_gt(atomic_load(&srv.max_batch), 1, "the server never answered several at once");
    cr_assert_eq(blast_count(&r, 200), 400);
    cr_assert_eq(blast_count(&r, 202), 100);
    cr_assert_eq(blast_count(&r, 204), 100);
    cr_assert_eq(blast_count(&r, 409), 100);
    cr_assert_eq(blast_count(&r, 100), 0, "interim answers are not responses");
    cr_assert_eq(r.connects, 2);
}

Test(blast, pipelined_responses_split_across_writes_are_parsed)
{
    static const char *const kinds[] = {"GET /ok", "GET /chunked", "HEAD /ok"};
    static client c;
    test_server srv;
    blast_result r;
    server_start(&srv, SEND_SPLIT, 1);
    client_init(&c, kinds, 3);
    blast_spec spec = spec_for(&srv, &c, 2, 48);
    spec.pipeline = 4;
    cr_assert_eq(blast_run(&spec, &r), 0, "%s", r.errstr);
    server_stop(&srv);
    expect_all_answered(&c, &r, 48);
}

Test(blast, large_bodies_are_received_whole)
{
    static const char *const kinds[] = {"GET /big", "GET /ok"};
    static client c;
    test_server srv;
    blast_result r;
    server_start(&srv, SEND_WHOLE, 1);
    client_init(&c, kinds, 2);
    blast_spec spec = spec_for(&srv, &c, 2, 20);
    spec.pipeline = 3;
    cr_assert_eq(blast_run(&spec, &r), 0, "%s", r.errstr);
    server_stop(&srv);
    expect_all_answered(&c, &r, 20);
}

Test(blast, connection_close_makes_it_reconnect_and_finish)
{
    static const char *const kinds[] = {"GET /ok", "GET /ok", "GET /ok", "GET /ok", "GET /close"};
    static client c;
    test_server srv;
    blast_result r;
    server_start(&srv, SEND_WHOLE, 0);
    client_init(&c, kinds, 5);
    blast_spec spec = spec_for(&srv, &c, 3, 100);
    cr_assert_eq(blast_run(&spec, &r), 0, "%s", r.errstr);
    server_stop(&srv);
    expect_all_answered(&c, &r, 100);
    /* 20 closes; only those that came after the last request was sent (one
     * per connection at most) need no new connection. */
    cr_assert_geq(r.connects, 3 + 20 - 3, "%zu connects", r.connects);
    cr_assert_eq(r.connects, (size_t)atomic_load(&srv.accepted));
}

Test(blast, a_body_without_length_ends_with_the_connection)
{
    static const char *const kinds[] = {"GET /eof"};
    static client c;
    test_server srv;
    blast_result r;
    server_start(&srv, SEND_SPLIT, 0);
    client_init(&c, kinds, 1);
    blast_spec spec = spec_for(&srv, &c, 2, 10);
    cr_assert_eq(blast_run(&spec, &r), 0, "%s", r.errstr);
    server_stop(&srv);
    expect_all_answered(&c, &r, 10);
    /* One connection per answer, plus at most one idle per slot at the end. */
    cr_assert(r.connects >= 10 && r.connects <= 12, "%zu connects", r.connects);
}

Test(blast, a_request_the_server_drops_is_lost_and_not_sent_again)
{
    static const char *const kinds[] = {"GET /ok", "GET /ok", "GET /ok", "GET /drop", "GET /ok"};
    static client c;
    test_server srv;
    blast_result r;
    server_start(&srv, SEND_WHOLE, 0);
    client_init(&c, kinds, 5);
    blast_spec spec = spec_for(&srv, &c, 1, 10);
    cr_assert_eq(blast_run(&spec, &r), -1);
    server_stop(&srv);
    cr_assert_eq(r.responses, 8, "%s", r.errstr);
    cr_assert_eq(r.lost, 2);
    cr_assert_eq(r.missing, 2);
    cr_assert_geq(r.transport_errors, 2);
    cr_assert_eq(c.status[3], 0, "the dropped request is reported with status 0");
    cr_assert_eq(c.status[8], 0);
    cr_assert_eq(c.calls[3], 1);
    cr_assert_eq(c.status[4], 200, "the next request went over a new connection");
    cr_assert_eq(c.repeated, 0);
    cr_assert_eq(c.bad_bodies, 0);
    cr_assert_eq(r.connects, 3);
}

Test(blast, a_malformed_response_is_a_transport_error)
{
    static const char *const kinds[] = {"GET /ok", "GET /garbage"};
    static client c;
    test_server srv;
    blast_result r;
    server_start(&srv, SEND_WHOLE, 0);
    client_init(&c, kinds, 2);
    blast_spec spec = spec_for(&srv, &c, 1, 4);
    cr_assert_eq(blast_run(&spec, &r), -1);
    server_stop(&srv);
    cr_assert_eq(r.responses, 2);
    cr_assert_eq(r.lost, 2);
    cr_assert_eq(c.status[1], 0);
    cr_assert_eq(c.status[2], 200);
    cr_assert(strstr(r.errstr, "malformed"), "%s", r.errstr);
}

Test(blast, a_server_that_never_answers_is_bounded_by_the_timeout)
{
    static const char *const kinds[] = {"GET /hang"};
    static client c;
    test_server srv;
    blast_result r;
    server_start(&srv, SEND_WHOLE, 0);
    client_init(&c, kinds, 1);
    blast_spec spec = spec_for(&srv, &c, 2, 50);
    spec.timeout_ms = 300;
    cr_assert_eq(blast_run(&spec, &r), -1);
    server_stop(&srv);
    cr_assert_eq(r.timed_out, 1);
    cr_assert_eq(r.responses, 0);
    cr_assert_eq(r.missing, 50);
    cr_assert_geq(r.elapsed_ms, 300);
    cr_assert_lt(r.elapsed_ms, 2000);
    cr_assert(strstr(r.errstr, "timed out") && strstr(r.errstr, "0 of 50"), "%s", r.errstr);
    for (size_t i = 0; i < 50; i++)
        cr_assert_eq(c.calls[i], 0, "no callback for requests in flight at the timeout");
}

Test(blast, nothing_listening_fails_fast_with_the_reason)
{
    static const char *const kinds[] = {"GET /ok"};
    static client c;
    test_server srv;
    blast_result r;
    /* A port that was just free: bind one, note it, close it. */
    server_start(&srv, SEND_WHOLE, 0);
    server_stop(&srv);
    client_init(&c, kinds, 1);
    blast_spec spec = spec_for(&srv, &c, 3, 30);
    spec.timeout_ms = 10000;
    cr_assert_eq(blast_run(&spec, &r), -1);
    cr_assert_eq(r.timed_out, 0, "gave up on its own: %s", r.errstr);
    cr_assert_lt(r.elapsed_ms, 3000);
    cr_assert_eq(r.responses, 0);
    cr_assert_eq(r.missing, 30);
    cr_assert_eq(r.lost, 0, "nothing was sent");
    cr_assert_geq(r.transport_errors, 3);
    cr_assert(strstr(r.errstr, "connect"), "%s", r.errstr);
}

Test(blast, a_failing_build_stops_the_run)
{
    static const char *const kinds[] = {"GET /ok"};
    static client c;
    test_server srv;
    blast_result r;
    server_start(&srv, SEND_WHOLE, 0);
    client_init(&c, kinds, 1);
    c.fail_build_at = 3;
    blast_spec spec = spec_for(&srv, &c, 1, 10);
    cr_assert_eq(blast_run(&spec, &r), -1);
    server_stop(&srv);
    cr_assert(strstr(r.errstr, "request 3"), "%s", r.errstr);
    cr_assert_lt(r.responses, 10);
}

Test(blast, more_connections_than_requests_opens_only_what_is_needed)
{
    static const char *const kinds[] = {"GET /ok"};
    static client c;
    test_server srv;
    blast_result r;
    server_start(&srv, SEND_WHOLE, 0);
    client_init(&c, kinds, 1);
    blast_spec spec = spec_for(&srv, &c, 50, 3);
    cr_assert_eq(blast_run(&spec, &r), 0, "%s", r.errstr);
    server_stop(&srv);
    expect_all_answered(&c, &r, 3);
    cr_assert_eq(r.connects, 3);
}

Test(blast, many_connections_share_the_requests)
{
    static const char *const kinds[] = {"POST /s202", "POST /s409"};
    static client c;
    test_server srv;
    blast_result r;
    server_start(&srv, SEND_WHOLE, 0);
    client_init(&c, kinds, 2);
    blast_spec spec = spec_for(&srv, &c, 200, 4000);
    cr_assert_eq(blast_run(&spec, &r), 0, "%s", r.errstr);
    server_stop(&srv);
    expect_all_answered(&c, &r, 4000);
    cr_assert_eq(blast_count(&r, 202), 2000);
    cr_assert_eq(blast_count(&r, 409), 2000);
    cr_assert_eq(r.connects, 200);
}

Test(blast, zero_requests_is_an_empty_success)
{
    static const char *const kinds[] = {"GET /ok"};
    static client c;
    blast_result r;
    client_init(&c, kinds, 1);
    blast_spec spec = {.port = 1, .connections = 1, .requests = 0, .build = build, .ctx = &c};
    cr_assert_eq(blast_run(&spec, &r), 0);
    cr_assert_eq(r.responses, 0);
    cr_assert_eq(r.missing, 0);
}

Test(blast, a_spec_without_build_or_connections_is_refused)
{
    blast_result r;
    blast_spec spec = {.port = 8080, .connections = 1, .requests = 5};
    cr_assert_eq(blast_run(&spec, &r), -1);
    cr_assert_eq(r.missing, 5);
    cr_assert(strstr(r.errstr, "build"), "%s", r.errstr);
    spec.build = build;
    spec.connections = 0;
    cr_assert_eq(blast_run(&spec, &r), -1);
}

/* ---- the parser, fed with bytes ---- */

/* Parses a copy of text (the parser may rewrite its buffer). */
static int parse(const char *text, size_t len, int head, int at_eof, blast_response *r, char *copy)
{
    memcpy(copy, text, len);
    return blast_parse(copy, len, head, at_eof, r);
}

Test(blast_parse, every_prefix_of_a_response_asks_for_more)
{
    const char *text = "HTTP/1.1 202 Accepted\r\nContent-Type: application/json\r\n"
                       "Content-Length: 17\r\n\r\n{\"status\":\"ok\"}\n ";
    size_t len = strlen(text);
    char copy[256];
    blast_response r;
    for (size_t i = 0; i < len; i++)
        cr_assert_eq(parse(text, i, 0, 0, &r, copy), 0, "prefix of %zu bytes", i);
    cr_assert_eq(parse(text, len, 0, 0, &r, copy), 1);
    cr_assert_eq(r.status, 202);
    cr_assert_eq(r.consumed, len);
    cr_assert_eq(r.body_len, 17);
    cr_assert_eq(memcmp(r.body, "{\"status\":\"ok\"}\n ", 17), 0);
    cr_assert_eq(r.close, 0);
}

Test(blast_parse, two_responses_in_one_buffer_are_parsed_one_at_a_time)
{
    char buf[] = "HTTP/1.1 409 Conflict\r\nContent-Length: 2\r\n\r\nabHTTP/1.1 200 OK\r\n"
                 "content-length: 3\r\nConnection: close\r\n\r\nxyz";
    size_t len = strlen(buf);
    blast_response r;
    cr_assert_eq(blast_parse(buf, len, 0, 0, &r), 1);
    cr_assert_eq(r.status, 409);
    cr_assert_eq(r.body_len, 2);
    cr_assert_eq(memcmp(r.body, "ab", 2), 0);
    size_t first = r.consumed;
    cr_assert_eq(blast_parse(buf + first, len - first, 0, 0, &r), 1);
    cr_assert_eq(r.status, 200);
    cr_assert_eq(memcmp(r.body, "xyz", 3), 0);
    cr_assert_eq(r.close, 1, "header names and values are case-insensitive");
    cr_assert_eq(first + r.consumed, len);
}

Test(blast_parse, http_1_0_closes_unless_keep_alive)
{
    char a[] = "HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n";
    char b[] = "HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\nContent-Length: 0\r\n\r\n";
    blast_response r;
    cr_assert_eq(blast_parse(a, strlen(a), 0, 0, &r), 1);
    cr_assert_eq(r.close, 1);
    cr_assert_eq(blast_parse(b, strlen(b), 0, 0, &r), 1);
    cr_assert_eq(r.close, 0);
}

Test(blast_parse, chunked_body_is_joined_in_place)
{
    char buf[] = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                 "5;name=v\r\nhello\r\nA\r\n, chunked!\r\n0\r\nTrailer: x\r\n\r\nNEXT";
    size_t len = strlen(buf);
    blast_response r;
    for (size_t i = 0; i < len - 4; i++) {
        char copy[256];
        cr_assert_eq(parse(buf, i, 0, 0, &r, copy), 0, "prefix of %zu bytes", i);
    }
    cr_assert_eq(blast_parse(buf, len, 0, 0, &r), 1);
    cr_assert_eq(r.body_len, 15);
    cr_assert_eq(memcmp(r.body, "hello, chunked!", 15), 0);
    cr_assert_eq(r.consumed, len - 4, "the next response starts right after");
}

Test(blast_parse, no_body_for_head_204_304_and_1xx)
{
    char head[] = "HTTP/1.1 200 OK\r\nContent-Length: 50\r\n\r\n";
    char none[] = "HTTP/1.1 204 No Content\r\n\r\n";
    char same[] = "HTTP/1.1 304 Not Modified\r\nContent-Length: 9\r\n\r\n";
    char cont[] = "HTTP/1.1 100 Continue\r\n\r\n";
    blast_response r;
    cr_assert_eq(blast_parse(head, strlen(head), 1, 0, &r), 1);
    cr_assert_eq(r.body_len, 0);
    cr_assert_eq(r.consumed, strlen(head));
    cr_assert_eq(blast_parse(none, strlen(none), 0, 0, &r), 1);
    cr_assert_eq(r.status, 204);
    cr_assert_eq(r.consumed, strlen(none));
    cr_assert_eq(blast_parse(same, strlen(same), 0, 0, &r), 1);
    cr_assert_eq(r.body_len, 0);
    cr_assert_eq(blast_parse(cont, strlen(cont), 0, 0, &r), 1);
    cr_assert_eq(r.interim, 1);
    cr_assert_eq(r.status, 100);
}

Test(blast_parse, a_body_without_length_needs_the_end_of_the_connection)
{
    char buf[] = "HTTP/1.1 200 OK\r\n\r\nuntil the end";
    blast_response r;
    cr_assert_eq(blast_parse(buf, strlen(buf), 0, 0, &r), 0);
    cr_assert_eq(blast_parse(buf, strlen(buf), 0, 1, &r), 1);
    cr_assert_eq(r.body_len, 13);
    cr_assert_eq(r.close, 1);
}

Test(blast_parse, bytes_that_are_not_http_are_refused)
{
    const char *bad[] = {
        "HTTX/1.1 200 OK\r\n\r\n",
        "HTTP/2.0 200 OK\r\n\r\n",
        "HTTP/1.1 20 OK\r\n\r\n",
        "HTTP/1.1 2000 OK\r\n\r\n",
        "HTTP/1.1 099 Low\r\n\r\n",
        "HTTP/1.1 600 High\r\n\r\n",
        "HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n",
        "HTTP/1.1 200 OK\r\nContent-Length: 12a\r\n\r\n",
        "HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabcd\r\n",
        "<html>",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char copy[256];
        blast_response r;
        cr_assert_eq(parse(bad[i], strlen(bad[i]), 0, 0, &r, copy), -1, "accepted: %s", bad[i]);
    }
}
