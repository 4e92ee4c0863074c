/* redis_reply.h: reading a Redis reply as a number, and judging one that is
 * not what a command should answer, for every caller (the blocking
 * connections' replies, redis_nodes.h's, the laboratory's). Pure but for
 * the log. */
#ifndef SECKILL_REDIS_REPLY_H
#define SECKILL_REDIS_REPLY_H

#include <stdint.h>

#include <hiredis/hiredis.h>

/* r as a number: an integer reply, or a string or status reply whose whole
 * text is a decimal integer (HGET's values, GET's counters). Returns 0 with
 * *out, or -1 (no reply, nil, an error, an array, other text). Does not
 * free r. */
int redis_reply_number(const redisReply *r, int64_t *out);

/* r as a number as redis_reply_number, or absent when r is nil (a field or
 * key that is not there: HMGET's, GET's). Returns 0 with *out, or -1. */
int redis_reply_number_or(const redisReply *r, int64_t absent, int64_t *out);

/* The entries [from, from + n) of the array reply r as numbers
 * (redis_reply_number) into out[0..n). Returns 0, or -1 when r is not an
 * array of that many entries or one of them is not a number (out is then
 * partly written). Does not free r. */
int redis_reply_numbers(const redisReply *r, size_t from, size_t n, int64_t *out);

/* r as a real number: an integer reply, or a string whose whole text is a
 * finite decimal number ("2.5", "1e-3"). Returns 0 with *out, or -1. */
int redis_reply_real(const redisReply *r, double *out);

/* Logs for component that r, the reply to command what (may be NULL), is
 * not the one expected (none: the connection failed; an error: its text;
 * else "unexpected reply"), and frees it. Returns -1, for the caller to
 * return in turn. */
int redis_reply_unexpected(redisReply *r, const char *component, const char *what);

/* Takes r (frees it): its number (redis_reply_number) in *out and 0, or,
 * when it has none, -1 as redis_reply_unexpected (logged). */
int redis_reply_int(redisReply *r, const char *component, const char *what, int64_t *out);

/* Takes r (frees it), the reply to a command whose answer says nothing but
 * that it ran: 0 when r is of type (REDIS_REPLY_STATUS, _INTEGER, ...), or,
 * when it is not, -1 as redis_reply_unexpected (logged). */
int redis_reply_expect(redisReply *r, int type, const char *component, const char *what);

#endif
