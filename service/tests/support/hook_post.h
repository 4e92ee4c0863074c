/* hook_post.h: a webhook delivery as seckill-webhooks posts it, sent by a
 * test to a receiver (the sample receiver, the bench's sink) over one
 * connection of its own. */
#ifndef SECKILL_HOOK_POST_H
#define SECKILL_HOOK_POST_H

#include <stdint.h>

/* POST /hook with body, Seckill-Event-Id: id and Seckill-Signature:
 * signature to 127.0.0.1:port (Connection: close). Returns the answer's
 * status code; asserts that something answered within 5 s. */
int hook_post(int port, const char *body, const char *signature, int64_t id);

#endif
