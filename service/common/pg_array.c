/* pg_array.c: a PostgreSQL array literal built one element at a time. */
#include "pg_array.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "array.h"

/* Room for `more` bytes of element, its comma and the NUL after the
 * closing brace. 0, or -1 (a->failed set). */
static int room(pg_array *a, size_t more)
{
    if (a->failed)
        return -1;
    size_t base = a->len ? a->len : 1; /* "{" before the first element */
    if (more > SIZE_MAX - base - 3) {
        a->failed = 1;
        return -1;
    }
    char *grown = array_grow(a->text, &a->cap, base + more + 3, 1, 64);
    if (!grown) {
        a->failed = 1;
        return -1;
    }
    a->text = grown;
    return 0;
}

/* Opens the next element's place: the text without its closing brace,
 * then '{' or ','. */
static void open_element(pg_array *a)
{
    if (a->n == 0) {
        a->text[0] = '{';
        a->len = 1;
    } else {
        a->text[a->len - 1] = ','; /* over the closing brace */
    }
}

static void close_element(pg_array *a)
{
    a->text[a->len++] = '}';
    a->text[a->len] = '\0';
    a->n++;
}

/* Appends an element whose text needs no quoting. */
static int add_bare(pg_array *a, const char *s, size_t n)
{
    if (room(a, n) < 0)
        return -1;
    open_element(a);
    memcpy(a->text + a->len, s, n);
    a->len += n;
    close_element(a);
    return 0;
}

int pg_array_add_i64(pg_array *a, int64_t v)
{
    char s[24];
    int n = snprintf(s, sizeof(s), "%" PRId64, v);
    return add_bare(a, s, (size_t)n);
}

int pg_array_add_null(pg_array *a)
{
    return add_bare(a, "NULL", 4);
}

/* Whether PostgreSQL's array input would not read s back as itself bare. */
static int needs_quotes(const char *s)
{
    if (*s == '\0' || strcasecmp(s, "NULL") == 0)
        return 1;
    for (; *s; s++)
        if (strchr("{}\",\\ \t\n\r\v\f", *s))
            return 1;
    return 0;
}

int pg_array_add_text(pg_array *a, const char *s)
{
    size_t n = strlen(s);
    if (!needs_quotes(s))
        return add_bare(a, s, n);
    /* "..." with every quote and backslash escaped: at most 2n + 2. */
    if (n > (SIZE_MAX - 2) / 2 || room(a, 2 * n + 2) < 0) {
        a->failed = 1;
        return -1;
    }
    open_element(a);
    a->text[a->len++] = '"';
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            a->text[a->len++] = '\\';
        a->text[a->len++] = *s;
    }
    a->text[a->len++] = '"';
    close_element(a);
    return 0;
}

const char *pg_array_text(const pg_array *a)
{
    if (a->failed)
        return NULL;
    return a->n ? a->text : "{}";
}

int pg_array_reserve_i64(pg_array *a, size_t count)
{
    /* "-9223372036854775808," is 21 bytes. */
    if (count > SIZE_MAX / 21 || room(a, count * 21) < 0) {
        a->failed = 1;
        return -1;
    }
    if (a->n == 0)
        pg_array_reset(a);
    return 0;
}

void pg_array_reset(pg_array *a)
{
    a->n = 0;
    a->failed = 0;
    a->len = 0;
    if (a->text) {
        memcpy(a->text, "{}", 3);
        a->len = 2;
    }
}

void pg_array_free(pg_array *a)
{
    free(a->text);
    memset(a, 0, sizeof(*a));
}

char *pg_array_of_i64(const void *first, size_t n, size_t stride)
{
    pg_array a = {0};
    for (size_t i = 0; i < n; i++) {
        int64_t v;
        memcpy(&v, (const char *)first + i * stride, sizeof(v));
        if (pg_array_add_i64(&a, v) < 0) {
            pg_array_free(&a);
            return NULL;
        }
    }
    if (n == 0)
        return strdup("{}");
    return a.text; /* the caller's now */
}
