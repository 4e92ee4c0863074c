/* metrics_http.h: a minimal HTTP listener that answers GET /metrics with a
 * freshly rendered exposition: seckill-worker's only HTTP, and the server's
 * /metrics on an address of its own (metrics_listen). One thread; scrapes
 * are rare. */
#ifndef SECKILL_METRICS_HTTP_H
#define SECKILL_METRICS_HTTP_H

#include <stddef.h>

typedef struct metrics_http metrics_http;

/* Renders the exposition; the listener frees the result. NULL: 500. */
typedef char *(*metrics_http_render)(void *ctx);

/* The longest host of an address metrics_http_parse_address accepts. */
#define METRICS_HTTP_HOST_MAX 16

/* Splits "host:port" (host an IPv4 address, port 1 to 65535) into host and
 * *port. Returns 0, or -1 with why set. Pure. */
int metrics_http_parse_address(const char *text, char host[METRICS_HTTP_HOST_MAX], int *port,
                               char *why, size_t whylen);

/* Listens on host:port. Returns NULL with err set on failure. */
metrics_http *metrics_http_start(const char *host, int port, metrics_http_render render, void *ctx,
                                 char *err, size_t errlen);

/* Stops listening. NULL is a no-op. */
void metrics_http_stop(metrics_http *h);

#endif
