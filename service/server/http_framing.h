/* http_framing.h: the request framing RFC 9112 says to refuse, because a
 * proxy in front of us could read it differently than libmicrohttpd does
 * (the raw material of request smuggling). Pure: fed header names, it says
 * what is wrong. */
#ifndef SECKILL_HTTP_FRAMING_H
#define SECKILL_HTTP_FRAMING_H

#include <stddef.h>

typedef struct http_framing {
    int content_length;    /* how many Content-Length headers */
    int transfer_encoding; /* how many Transfer-Encoding headers */
    int host;              /* how many Host headers */
    int bad_name;          /* a header name that is not an RFC 9110 token */
} http_framing;

/* Counts one request header by its name (len bytes, NUL bytes included). */
void http_framing_note(http_framing *f, const char *name, size_t len);

/* NULL when the headers noted frame the request soundly; else why not, for
 * a 400. version is the request line's ("HTTP/1.1"). */
const char *http_framing_problem(const http_framing *f, const char *version);

#endif
