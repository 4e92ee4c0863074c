/* order.c: order ids and the queue format of an order. */
#include "order.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "keys.h"
#include "validate.h"

void order_id_gen_init(order_id_gen *gen, unsigned node)
{
    gen->node = node & ORDER_NODE_MAX;
    /* last always carries the node bits, so last + one step does too. */
    atomic_init(&gen->last, gen->node);
}

int64_t order_id_next(order_id_gen *gen, int64_t now_ms)
{
    uint64_t ms = now_ms > ORDER_EPOCH_MS ? (uint64_t)(now_ms - ORDER_EPOCH_MS) : 0;
    uint64_t floor = (ms << 22) | gen->node;
    uint64_t last = atomic_load_explicit(&gen->last, memory_order_relaxed);
    uint64_t next;
    do {
        /* One step of the sequence is 1 << ORDER_NODE_BITS: the node bits stay. */
        next = last + (1u << ORDER_NODE_BITS);
        if (next < floor)
            next = floor;
    } while (!atomic_compare_exchange_weak_explicit(&gen->last, &last, next, memory_order_relaxed,
                                                    memory_order_relaxed));
    return (int64_t)next;
}

int order_encode(const order *o, char *buf, size_t len)
{
    char placed[64] = "";
    if (o->segment_id || o->home_id)
        snprintf(placed, sizeof(placed), ",\"segment\":%" PRId64 ",\"home\":%" PRId64,
                 o->segment_id, o->home_id);
    int n = snprintf(buf, len,
                     "{\"order_id\":\"%" PRId64 "\",\"item_id\":%" PRId64 ",\"user_id\":%" PRId64
                     ",\"round\":%" PRId64 ",\"created_ms\":%" PRId64
                     ",\"quantity\":%d,\"first_unit\":%" PRId64 "%s}",
                     o->id, o->item_id, o->user_id, o->round, o->created_ms, o->quantity,
                     o->first_unit, placed);
    return n < 0 || (size_t)n >= len ? -1 : n;
}

/* Where a split item's order was placed: both key ids or neither (0), and
 * both of the order's own item, or a return would give its units to
 * another item's keys. */
static int placed_in_item(int64_t item, int64_t segment, int64_t home)
{
    if (segment == 0 && home == 0)
        return 1;
    return segment > 0 && home > 0 && keys_segment_item(segment) == item &&
           keys_segment_item(home) == item;
}

/* The checks every decoded order passes, whichever path read it. */
static int plausible(int64_t id, int64_t item, int64_t user, int64_t quantity, int64_t first_unit,
                     int64_t segment, int64_t home)
{
    return id > 0 && item > 0 && user > 0 && quantity >= 1 && quantity <= ORDER_QUANTITY_MAX &&
           first_unit >= 1 && placed_in_item(item, segment, home);
}

int order_decode_json(const char *text, size_t len, order *o)
{
    json_error_t error;
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &error);
    if (!root)
        return -1;
    const char *id;
    json_int_t item, user, round, created, quantity = 1, first_unit = 1, segment = 0, home = 0;
    int64_t id_value = 0;
    int rc = json_unpack(root, "{s:s, s:I, s:I, s:I, s:I, s?I, s?I, s?I, s?I}", "order_id", &id,
                         "item_id", &item, "user_id", &user, "round", &round, "created_ms",
                         &created, "quantity", &quantity, "first_unit", &first_unit, "segment",
                         &segment, "home", &home);
    if (rc == 0 && validate_i64(id, strlen(id), &id_value) == 0 &&
        plausible(id_value, item, user, quantity, first_unit, segment, home)) {
        o->segment_id = segment;
        o->home_id = home;
        o->id = id_value;
        o->quantity = (int)quantity;
        o->first_unit = first_unit;
        o->item_id = item;
        o->user_id = user;
        o->round = round;
        o->created_ms = created;
    } else {
        rc = -1;
    }
    json_decref(root);
    return rc;
}

/* The fixed-format reader: the exact bytes order_encode and the reserve
 * script write, nothing else (no spaces, these keys in this order). */
typedef struct cursor {
    const char *p;
    const char *end;
} cursor;

/* Consumes the literal lit. */
static int take(cursor *c, const char *lit)
{
    size_t n = strlen(lit);
    if ((size_t)(c->end - c->p) < n || memcmp(c->p, lit, n) != 0)
        return -1;
    c->p += n;
    return 0;
}

/* Consumes an integer as JSON writes it (validate_i64's grammar: an optional
 * minus, no leading zero, in int64's range). A fraction or an exponent is a
 * real number to JSON: not ours to read. */
static int take_int(cursor *c, int64_t *v)
{
    const char *start = c->p;
    while (c->p < c->end && ((*c->p >= '0' && *c->p <= '9') || *c->p == '-'))
        c->p++;
    if (c->p < c->end && (*c->p == '.' || *c->p == 'e' || *c->p == 'E'))
        return -1;
    return validate_i64(start, (size_t)(c->p - start), v);
}

/* Returns 0 with o filled when text is the canonical shape of a plausible
 * order, -1 otherwise (then the general decoder decides). */
static int decode_canonical(const char *text, size_t len, order *o)
{
    cursor c = {text, text + len};
    int64_t id, item, user, round, created, quantity = 1, first_unit = 1, segment = 0, home = 0;
    if (take(&c, "{\"order_id\":\"") < 0 || take_int(&c, &id) < 0 ||
        take(&c, "\",\"item_id\":") < 0 || take_int(&c, &item) < 0 ||
        take(&c, ",\"user_id\":") < 0 || take_int(&c, &user) < 0 || take(&c, ",\"round\":") < 0 ||
        take_int(&c, &round) < 0 || take(&c, ",\"created_ms\":") < 0 || take_int(&c, &created) < 0)
        return -1;
    if (take(&c, ",\"quantity\":") == 0 &&
        (take_int(&c, &quantity) < 0 || take(&c, ",\"first_unit\":") < 0 ||
         take_int(&c, &first_unit) < 0))
        return -1;
    if (take(&c, ",\"segment\":") == 0 &&
        (take_int(&c, &segment) < 0 || segment <= 0 || take(&c, ",\"home\":") < 0 ||
         take_int(&c, &home) < 0 || home <= 0))
        return -1;
    if (take(&c, "}") < 0 || c.p != c.end ||
        !plausible(id, item, user, quantity, first_unit, segment, home))
        return -1;
    *o = (order){id, item, user, round, created, (int)quantity, first_unit, segment, home};
    return 0;
}

/* The worker decodes every order, and jansson's tree of a whole object was
 * most of its CPU: the canonical shape, which is all the queue ever holds,
 * is read in place; anything else goes through jansson as before, so what
 * decodes, and to what, does not change. */
int order_decode(const char *text, size_t len, order *o)
{
    if (decode_canonical(text, len, o) == 0)
        return 0;
    return order_decode_json(text, len, o);
}
