/* pg_array.h: the text of a PostgreSQL array literal ("{1,2,3}"), the form
 * in which every array parameter of a statement is sent (unnest($1::bigint[]),
 * = ANY($1::bigint[])), built one element at a time. Pure. */
#ifndef SECKILL_PG_ARRAY_H
#define SECKILL_PG_ARRAY_H

#include <stddef.h>
#include <stdint.h>

/* A literal being built. Zeroed ({0}) it is empty and owns nothing; its
 * text is "{}" until an element comes. */
typedef struct pg_array {
    char *text; /* the literal, NUL-terminated; NULL until it has room */
    size_t len; /* the text's length, the closing brace included */
    size_t cap;
    size_t n;   /* elements */
    int failed; /* out of memory: every later add fails and the text is NULL */
} pg_array;

/* Appends one element: an integer, SQL NULL, or a text element (quoted and
 * escaped when PostgreSQL would read it otherwise: empty, "NULL", or holding
 * braces, quotes, commas, backslashes or white space). Returns 0, or -1
 * when out of memory (a->failed set, the literal kept as it was). */
int pg_array_add_i64(pg_array *a, int64_t v);
int pg_array_add_null(pg_array *a);
int pg_array_add_text(pg_array *a, const char *s);

/* The literal, owned by a (valid to the next add, reset or free): "{}"
 * when it has no element, NULL when an add failed. */
const char *pg_array_text(const pg_array *a);

/* Room for count more integers: as many pg_array_add_i64 after it (or
 * after a reset) cannot fail. 0, or -1 when out of memory. */
int pg_array_reserve_i64(pg_array *a, size_t count);

/* Empties a, keeping its room for the next literal (failed cleared); its
 * text, when it has room, is "{}". */
void pg_array_reset(pg_array *a);

/* Frees a's text; a is then empty. */
void pg_array_free(pg_array *a);

/* "{v0,v1,...}" of n integers, read every stride bytes from first (a column
 * of an array of structs, or stride sizeof(int64_t) for an int64_t array),
 * in a new string the caller frees; NULL when out of memory. */
char *pg_array_of_i64(const void *first, size_t n, size_t stride);

#endif
