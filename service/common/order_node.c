/* order_node.c: a node number for order ids, from Redis's counter. */
#include "order_node.h"

#include "keys.h"
#include "order.h"

int order_node_take(redis_nodes *rn, unsigned *node)
{
    const char *argv[] = {"INCR", KEYS_NODE_SEQ};
    redisReply *r = redis_nodes_command(rn, KEYS_NODE_SEQ, 2, argv, NULL);
    int ok = r && r->type == REDIS_REPLY_INTEGER;
    if (ok)
        *node = (unsigned)(r->integer % (ORDER_NODE_MAX + 1));
    freeReplyObject(r);
    return ok ? 0 : -1;
}
