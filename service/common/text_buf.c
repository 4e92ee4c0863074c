/* text_buf.c: printf into the room left, and once more after growing it. */
#include "text_buf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "array.h"

void text_buf_printf(text_buf *t, const char *fmt, ...)
{
    /* The first try fits the room left, or says how much is needed; the
     * second then fits. */
    for (int tries = 0; tries < 2 && !t->failed; tries++) {
        size_t room = t->cap - t->len;
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(room ? t->s + t->len : NULL, room, fmt, ap);
        va_end(ap);
        if (n < 0) {
            t->failed = 1;
            return;
        }
        if ((size_t)n < room) {
            t->len += (size_t)n;
            return;
        }
        char *grown = array_grow(t->s, &t->cap, t->len + (size_t)n + 1, 1, TEXT_BUF_FIRST);
        if (!grown) {
            t->failed = 1;
            return;
        }
        t->s = grown;
    }
}

char *text_buf_take(text_buf *t)
{
    char *s = t->s;
    if (t->failed) {
        free(s);
        s = NULL;
    } else if (!s) {
        s = calloc(1, 1);
    }
    *t = (text_buf)TEXT_BUF_INIT;
    return s;
}
