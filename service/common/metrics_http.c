/* metrics_http.c: libmicrohttpd in its simplest mode (one internal thread). */
#include "metrics_http.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <microhttpd.h>

#include "json_io.h"
#include "status.h"
#include "validate.h"

struct metrics_http {
    struct MHD_Daemon *daemon;
    metrics_http_render render;
    void *ctx;
};

static enum MHD_Result answer(struct MHD_Connection *conn, unsigned status, const char *type,
                              const char *body, size_t len)
{
    struct MHD_Response *r =
        MHD_create_response_from_buffer(len, (void *)body, MHD_RESPMEM_MUST_COPY);
    if (!r)
        return MHD_NO;
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
    enum MHD_Result rc = MHD_queue_response(conn, status, r);
    MHD_destroy_response(r);
    return rc;
}

/* An error answer: its body from the one writer (json_io_error). */
static enum MHD_Result answer_error(struct MHD_Connection *conn, sk_status st, const char *message)
{
    char body[256];
    int n = json_io_error(body, sizeof(body), st, message);
    return answer(conn, (unsigned)sk_status_http(st), "application/json", body,
                  n > 0 ? (size_t)n : 0);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_data_size, void **con_cls)
{
    metrics_http *h = cls;
    (void)version;
    (void)upload_data;
    if (*upload_data_size > 0) { /* a body nobody asked for: drop it */
        *upload_data_size = 0;
        return MHD_YES;
    }
    (void)con_cls;
    if (strcmp(url, "/metrics") != 0)
        return answer_error(conn, SK_NOT_FOUND, "only /metrics here");
    if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0)
        return answer_error(conn, SK_METHOD_NOT_ALLOWED, "GET only");
    char *text = h->render(h->ctx);
    if (!text)
        return answer_error(conn, SK_INTERNAL, "out of memory");
    enum MHD_Result rc = answer(conn, 200, "text/plain; version=0.0.4", text, strlen(text));
    free(text);
    return rc;
}

int metrics_http_parse_address(const char *text, char host[METRICS_HTTP_HOST_MAX], int *port,
                               char *why, size_t whylen)
{
    const char *colon = strrchr(text, ':');
    struct in_addr ignored;
    size_t hostlen = colon ? (size_t)(colon - text) : 0;
    if (!colon || hostlen == 0 || hostlen >= METRICS_HTTP_HOST_MAX) {
        snprintf(why, whylen, "expected host:port (an IPv4 address), got '%s'", text);
        return -1;
    }
    memcpy(host, text, hostlen);
    host[hostlen] = '\0';
    if (inet_pton(AF_INET, host, &ignored) != 1) {
        snprintf(why, whylen, "'%s' is not an IPv4 address (in '%s')", host, text);
        return -1;
    }
    int64_t p;
    if (validate_i64(colon + 1, strlen(colon + 1), &p) < 0 || p < 1 || p > 65535) {
        snprintf(why, whylen, "the port of '%s' is not 1 to 65535", text);
        return -1;
    }
    *port = (int)p;
    return 0;
}

metrics_http *metrics_http_start(const char *host, int port, metrics_http_render render, void *ctx,
                                 char *err, size_t errlen)
{
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    if (inet_pton(AF_INET, host, &addr.sin_addr) != 1) {
        snprintf(err, errlen, "host: '%s' is not an IPv4 address", host);
        return NULL;
    }
    metrics_http *h = calloc(1, sizeof(*h));
    if (h) {
        h->render = render;
        h->ctx = ctx;
        h->daemon = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD, 0, NULL, NULL, on_request, h,
                                     MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&addr,
                                     MHD_OPTION_CONNECTION_TIMEOUT, 10u, MHD_OPTION_END);
    }
    if (!h || !h->daemon) {
        snprintf(err, errlen, "cannot listen on %s:%d for /metrics%s", host, port,
                 h ? "" : ": out of memory");
        free(h);
        return NULL;
    }
    return h;
}

void metrics_http_stop(metrics_http *h)
{
    if (!h)
        return;
    MHD_stop_daemon(h->daemon);
    free(h);
}
