/* text_buf.h: a text built piece by piece, printf-style, in one growing
 * buffer (the /metrics texts: metrics.c's, the server's whole answer with
 * the waiting rooms' gauges and counts, the deliverer's; the outbox's event
 * and page JSON). A write that cannot be made
 * (out of memory) is remembered and every later one ignored, so a builder
 * writes on without checking each call and asks once at the end. Pure. */
#ifndef SECKILL_TEXT_BUF_H
#define SECKILL_TEXT_BUF_H

#include <stddef.h>

typedef struct text_buf {
    char *s;    /* the text so far, NUL-terminated (NULL before the first write) */
    size_t len; /* its length */
    size_t cap; /* bytes of s */
    int failed; /* a write was lost: the text is incomplete */
} text_buf;

/* An empty text; nothing to free until a write. */
#define TEXT_BUF_INIT                                                                              \
    {                                                                                              \
        NULL, 0, 0, 0                                                                              \
    }

/* The room the first write makes, doubled as the text grows. */
#define TEXT_BUF_FIRST 4096

/* Appends fmt's text. On failure sets t->failed; after it, does nothing. */
void text_buf_printf(text_buf *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The text (the caller frees it; "" when nothing was written), or NULL
 * when a write was lost or the empty text could not be made. Leaves t
 * empty (TEXT_BUF_INIT) either way. */
char *text_buf_take(text_buf *t);

#endif
