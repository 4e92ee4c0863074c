/* order_lock.c: a buyer's order lock's key. */
#include "order_lock.h"

#include "keys.h"

int order_lock_key(char *buf, size_t len, const order *o)
{
    if (o->user_id == o->id)
        return -1;
    return keys_order_lock(buf, len, keys_of_order(o->item_id, o->home_id), o->user_id);
}
