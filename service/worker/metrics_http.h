/* metrics_http.h: a minimal HTTP listener that answers GET /metrics with a
 * freshly rendered exposition; for processes without an HTTP API of their
 * own (seckill-worker). One thread; scrapes are rare. */
#ifndef SECKILL_METRICS_HTTP_H
#define SECKILL_METRICS_HTTP_H

#include <stddef.h>

typedef struct metrics_http metrics_http;

/* Renders the exposition; the listener frees the result. NULL: 500. */
typedef char *(*metrics_http_render)(void *ctx);

/* Listens on host:port. Returns NULL with err set on failure. */
metrics_http *metrics_http_start(const char *host, int port, metrics_http_render render, void *ctx,
                                 char *err, size_t errlen);

/* Stops listening. NULL is a no-op. */
void metrics_http_stop(metrics_http *h);

#endif
