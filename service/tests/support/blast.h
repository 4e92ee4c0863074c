/* blast.h: a small HTTP/1.1 load client for the end-to-end tests: C
 * keep-alive connections to 127.0.0.1, N requests each built by a callback,
 * every response parsed and counted by status, all bounded by a timeout.
 * One thread, non-blocking sockets and epoll; no external tools. */
#ifndef SECKILL_BLAST_H
#define SECKILL_BLAST_H

#include <stddef.h>
#include <stdint.h>

/* Room given to one request by blast_build_fn. */
#define BLAST_REQUEST_MAX 16384
/* by_status is indexed by the status code itself: 100 .. 599 are used. */
#define BLAST_STATUS_MAX 600

/* Writes the complete raw request number index (request line, headers, the
 * body) into buf, at most cap bytes. Returns its length; 0 or more than cap
 * stops the run (a bug of the test, reported in errstr). A request starting
 * with "HEAD " expects no body in its response. */
typedef size_t (*blast_build_fn)(void *ctx, size_t index, char *buf, size_t cap);

/* Called once per request that got an answer or lost it: status is the
 * response's code and body its body (chunked coding removed; body_len bytes
 * and a NUL after them; valid only during the call). Status 0 with body NULL:
 * the request was sent but its connection failed before the answer came (it
 * is not sent again: the server may have acted on it). Never called for a
 * request still unsent or in flight when the timeout struck. */
typedef void (*blast_response_fn)(void *ctx, size_t index, int status, const char *body,
                                  size_t body_len);

typedef struct blast_spec {
    int port;             /* 127.0.0.1:port */
    size_t connections;   /* concurrent keep-alive connections (at most requests are opened) */
    size_t requests;      /* requests in total, indexes 0 .. requests-1, sent in order */
    size_t pipeline;      /* requests in flight per connection; 0 means 1 (no pipelining) */
    int timeout_ms;       /* bound of the whole run; 0 means 60000 */
    blast_build_fn build; /* required */
    blast_response_fn on_response; /* optional */
    void *ctx;                     /* passed to both callbacks */
} blast_spec;

typedef struct blast_result {
    size_t by_status[BLAST_STATUS_MAX]; /* responses per status code */
    size_t responses;                   /* requests answered */
    size_t lost;                        /* sent, then their connection failed: status 0 callbacks */
    size_t missing;          /* requests - responses: lost, unsent or in flight at the end */
    size_t transport_errors; /* failed connects, resets, early closes, malformed responses */
    size_t connects;         /* connections established, reconnections included */
    int timed_out;           /* the run hit timeout_ms */
    int64_t elapsed_ms;
    char errstr[192]; /* why missing > 0 (or why the spec was refused) */
} blast_result;

/* Runs the spec and fills *out (always, even on failure). Reconnects when the
 * server closes a connection (Connection: close, or EOF) while requests are
 * left; a slot whose connects keep failing is given up after a few tries.
 * Raises the soft RLIMIT_NOFILE when the connections need it. Returns 0 when
 * every request got a response, -1 otherwise (see errstr and the counts). */
int blast_run(const blast_spec *spec, blast_result *out);

/* Responses with this status (0 for anything outside 100 .. 599). */
size_t blast_count(const blast_result *r, int status);

/* One parsed response: the parser below knows nothing of sockets, so it is
 * tested by feeding bytes. */
typedef struct blast_response {
    int status;
    const char *body; /* inside the parsed buffer */
    size_t body_len;
    size_t consumed; /* bytes of the buffer this response took */
    int close;       /* the server ends the connection after it */
    int interim;     /* a 1xx answer: the final one follows */
} blast_response;

/* Parses the response at the start of buf[0 .. len). head_request: its request
 * was HEAD (no body follows). at_eof: no more bytes will come, so a body
 * without a length ends here. Returns 1 with *r filled, 0 when more bytes are
 * needed, -1 when the bytes are not HTTP/1.x. A chunked body is joined in
 * place, so buf[0 .. consumed) may be rewritten. */
int blast_parse(char *buf, size_t len, int head_request, int at_eof, blast_response *r);

#endif
