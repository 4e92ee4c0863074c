/* http_server.h: the HTTP front (libmicrohttpd, one epoll loop per thread).
 * Each request becomes an http_exchange handed to one handler. The handler
 * answers at once, or defers: the connection is suspended (no thread waits
 * on it) and any thread answers later, which resumes it. The loops are
 * http_loop.c, a request and its answer http_exchange.c. */
#ifndef SECKILL_HTTP_SERVER_H
#define SECKILL_HTTP_SERVER_H

#include <stddef.h>

#include "config.h"
#include "status.h"

typedef struct http_server http_server;
typedef struct http_exchange http_exchange;

/* Called once per complete request (body read) on an HTTP thread. It must
 * call http_exchange_reply() before returning, or http_exchange_defer() and
 * later http_exchange_reply() from any thread. */
typedef void (*http_handler)(void *ctx, http_exchange *ex);

struct event_base;

/* A part of the server's user that each loop thread owns (the purchase
 * path's Redis connection): start makes it for loop index on the loop's
 * libevent base, before the loop's thread runs (NULL: the server does not
 * start); stop ends it on the loop's own thread once the loop stopped
 * serving and before its daemon stops, so exchanges it deferred are still
 * answered. Either may be NULL. */
typedef struct http_loop_hooks {
    void *(*start)(void *ctx, int index, struct event_base *base);
    void (*stop)(void *ctx, int index, void *local);
    void *ctx;
} http_loop_hooks;

/* How many loop threads a server of cfg runs (http_threads, or one per
 * core); their indexes go from 0 to this minus one. */
int http_server_loop_count(const config *cfg);

/* Listens on cfg->host:cfg->port; hooks may be NULL. Returns NULL with err
 * set on failure. */
http_server *http_server_create(const config *cfg, http_handler handler, void *ctx,
                                const http_loop_hooks *hooks, char *err, size_t errlen);

/* Told of every answer as it is given (on the answering thread): the tag the
 * handler set (-1 if none), the status, the seconds since the request's
 * headers arrived, and the request's method, path and id. Must be quick. */
typedef void (*http_observer)(void *ctx, int tag, int status, double seconds, const char *method,
                              const char *path, const char *request_id);

/* Installs the observer; before requests arrive. */
void http_server_observe(http_server *s, http_observer observer, void *ctx);

/* Stops accepting new connections; requests under way go on. */
void http_server_quiesce(http_server *s);

/* The first step of a graceful stop, after quiesce: every answer from now on
 * closes its connection, and this waits until no request is left between
 * read and answered (deferred ones included) and every connection closed,
 * or stayed idle for a second, at most timeout_ms. Returns how many requests
 * were still open then (0: drained). The handler's backends must still run
 * meanwhile. */
int http_server_drain(http_server *s, int timeout_ms);

/* Stops the server; every deferred exchange must have been answered. NULL is
 * a no-op. */
void http_server_free(http_server *s);

/* The request, valid until the exchange is answered. Only on the handler's
 * thread, before http_exchange_defer(). */
const char *http_exchange_method(const http_exchange *ex);
const char *http_exchange_path(const http_exchange *ex);
const char *http_exchange_body(const http_exchange *ex, size_t *len);
/* A query argument or request header; NULL when absent. */
const char *http_exchange_query(const http_exchange *ex, const char *key);
const char *http_exchange_header(const http_exchange *ex, const char *name);

/* The answer to come will carry Retry-After: seconds (before the reply). */
void http_exchange_retry_after(http_exchange *ex, int seconds);

/* Headers an answer may carry besides those the server sets. */
#define HTTP_EXCHANGE_HEADERS_MAX 8

/* The answer to come will carry "name: value" (before the reply, on the
 * handler's thread). Both are kept, not copied: static strings, or the
 * request's own headers (valid until the exchange is answered). Returns 0,
 * or -1 when HTTP_EXCHANGE_HEADERS_MAX were added already. */
int http_exchange_add_header(http_exchange *ex, const char *name, const char *value);

/* Labels the exchange for the observer (the route); on the handler's thread. */
void http_exchange_tag(http_exchange *ex, int tag);

/* Suspends the connection until http_exchange_reply(). Call it before
 * handing the exchange to another thread. An answer given on the exchange's
 * own loop thread (a reply read by that loop) resumes it at the end of the
 * loop's turn, with the other answers of the turn, and wakes nothing. */
void http_exchange_defer(http_exchange *ex);

/* What the hooks' start made for the loop that holds the exchange; on that
 * loop's thread (the handler's, and the callbacks of the part itself). */
void *http_exchange_loop_local(const http_exchange *ex);

/* Answers with status and a JSON body (copied). allow, when not NULL, is sent
 * as the Allow header (405). Once per exchange; from any thread after a
 * defer. */
void http_exchange_reply(http_exchange *ex, int status, const char *body, size_t len,
                         const char *allow);

/* Answers status with body, a JSON text from malloc: the exchange takes it
 * and frees it (as jansson's *_new take their reference). NULL, an
 * allocation that failed, answers 500 out of memory. */
void http_exchange_reply_new(http_exchange *ex, int status, char *body);

/* Answers {"error": code, "message": message} with the HTTP status of the
 * outcome st (status.h: the one mapping); message NULL says the outcome's own
 * message. Every handler answers its errors this way. */
void http_exchange_reply_error(http_exchange *ex, sk_status st, const char *message);

/* The same with an Allow header (405). */
void http_exchange_reply_error_allow(http_exchange *ex, sk_status st, const char *message,
                                     const char *allow);

/* The same for an outcome status.h does not know, one a plugged-in part
 * maps itself (the laboratory's own): its HTTP status and code given; allow
 * may be NULL. */
void http_exchange_reply_error_as(http_exchange *ex, int status, const char *code,
                                  const char *message, const char *allow);

/* The same with another Content-Type than application/json (the web pages;
 * NULL: none, for an answer without a body). */
void http_exchange_reply_typed(http_exchange *ex, int status, const char *body, size_t len,
                               const char *content_type, const char *allow);

#endif
