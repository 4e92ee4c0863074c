/* webhook_dead.h: the webhooks' dead-letter as the admin sees it: the
 * deliveries that used up their attempts (GET /api/v1/webhooks/dead), and
 * their replay (POST /api/v1/webhooks/dead/replay): back to due, attempts
 * from zero, the deliverer woken. Over a pool thread's session. */
#ifndef SECKILL_WEBHOOK_DEAD_H
#define SECKILL_WEBHOOK_DEAD_H

#include <stdint.h>

#include "status.h"
#include "pool_session.h"

/* The dead deliveries of the events after `after` (at most limit events;
 * every endpoint's delivery of an event on the same page), of one endpoint
 * when endpoint_id > 0, as JSON into *body (the caller frees):
 * {"dead":[{"endpoint_id","url","event_id","type","order_id","attempts",
 * "last_error","dead_at"},...],"next_after":<the last event id of a full
 * page, else null>}. SK_OK, SK_BACKEND_DOWN or SK_INTERNAL. */
sk_status webhook_dead_list(pool_session *s, int64_t endpoint_id, int64_t after, int limit,
                            char **body);

/* Replays the dead-letter (one endpoint's when endpoint_id > 0):
 * {"replayed":n} into *body. SK_OK, SK_BACKEND_DOWN or SK_INTERNAL. */
sk_status webhook_dead_replay(pool_session *s, int64_t endpoint_id, char **body);

#endif
