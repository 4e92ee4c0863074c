/* redis_cluster.c: key slots, the slot map, redirects and seeds of Redis
 * Cluster (pure), and the one synchronous fetch of the map at the end. */
#include "redis_cluster.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "validate.h"

#define NO_OWNER UINT16_MAX

/* Bit by bit rather than by table: keys are a few dozen bytes, and this is
 * the specification's definition read directly. */
uint16_t redis_cluster_crc16(const char *buf, size_t len)
{
    uint16_t crc = 0;
    for (size_t i = 0; i < len; i++) {
        crc ^= (uint16_t)((unsigned char)buf[i] << 8);
        for (int bit = 0; bit < 8; bit++)
            crc = (crc & 0x8000) ? (uint16_t)((crc << 1) ^ 0x1021) : (uint16_t)(crc << 1);
    }
    return crc;
}

int redis_cluster_slot(const char *key, size_t len)
{
    const char *open = memchr(key, '{', len);
    if (open) {
        size_t from = (size_t)(open - key) + 1;
        const char *close = memchr(key + from, '}', len - from);
        /* "{}" is no tag: the whole key is hashed. */
        if (close && close > key + from)
            return redis_cluster_crc16(key + from, (size_t)(close - key) - from) &
                   (REDIS_CLUSTER_SLOTS - 1);
    }
    return redis_cluster_crc16(key, len) & (REDIS_CLUSTER_SLOTS - 1);
}

int redis_cluster_node_equal(const redis_cluster_node *a, const redis_cluster_node *b)
{
    return a->port == b->port && strcmp(a->host, b->host) == 0;
}

/* Parses a port of exactly len decimal bytes (1..65535). Returns it or -1. */
static int parse_port(const char *s, size_t len)
{
    int64_t n;
    if (len == 0 || len > 5 || validate_i64(s, len, &n) < 0 || n < 1 || n > 65535)
        return -1;
    return (int)n;
}

/* Copies len bytes of host into node; -1 when it does not fit. */
static int set_host(redis_cluster_node *node, const char *host, size_t len)
{
    if (len >= sizeof(node->host))
        return -1;
    memcpy(node->host, host, len);
    node->host[len] = '\0';
    return 0;
}

/* --- seeds ------------------------------------------------------------------ */

/* One "host:port" or "[v6]:port" entry of len bytes, already trimmed. */
static int parse_seed(const char *s, size_t len, redis_cluster_node *out, char *why, size_t whylen)
{
    const char *host = s, *colon;
    size_t hostlen;
    if (len > 0 && s[0] == '[') {
        const char *close = memchr(s, ']', len);
        if (!close || close + 1 == s + len || close[1] != ':') {
            snprintf(why, whylen, "expected [address]:port");
            return -1;
        }
        host = s + 1;
        hostlen = (size_t)(close - host);
        colon = close + 1;
    } else {
        colon = NULL;
        for (size_t i = len; i > 0; i--)
            if (s[i - 1] == ':') {
                colon = s + i - 1;
                break;
            }
        if (!colon) {
            snprintf(why, whylen, "expected host:port");
            return -1;
        }
        hostlen = (size_t)(colon - s);
    }
    if (hostlen == 0) {
        snprintf(why, whylen, "the host is empty");
        return -1;
    }
    for (size_t i = 0; i < hostlen; i++)
        if (isspace((unsigned char)host[i]) || host[i] == '[' || host[i] == ']') {
            snprintf(why, whylen, "the host holds '%c'", host[i]);
            return -1;
        }
    if (set_host(out, host, hostlen) < 0) {
        snprintf(why, whylen, "the host is longer than %d bytes", REDIS_CLUSTER_HOST_MAX - 1);
        return -1;
    }
    size_t portlen = len - (size_t)(colon + 1 - s);
    if ((out->port = parse_port(colon + 1, portlen)) < 0) {
        snprintf(why, whylen, "the port must be a number in 1..65535");
        return -1;
    }
    return 0;
}

int redis_cluster_seeds_parse(const char *text, redis_cluster_node *out, size_t cap, char *err,
                              size_t errlen)
{
    const char *p = text;
    while (isspace((unsigned char)*p))
        p++;
    if (*p == '\0')
        return 0;
    size_t n = 0;
    for (int entry = 1;; entry++) {
        const char *end = strchr(p, ',');
        if (!end)
            end = p + strlen(p);
        const char *a = p, *b = end;
        while (a < b && isspace((unsigned char)*a))
            a++;
        while (b > a && isspace((unsigned char)b[-1]))
            b--;
        char why[96];
        if (a == b) {
            snprintf(err, errlen, "entry %d is empty (expected host:port,host:port,...)", entry);
            return -1;
        }
        if (n == cap) {
            snprintf(err, errlen, "more than %zu entries", cap);
            return -1;
        }
        if (parse_seed(a, (size_t)(b - a), &out[n], why, sizeof(why)) < 0) {
            snprintf(err, errlen, "entry %d '%.*s': %s", entry, (int)(b - a > 80 ? 80 : b - a), a,
                     why);
            return -1;
        }
        n++;
        if (*end == '\0')
            return (int)n;
        p = end + 1;
    }
}

/* --- the slot map ----------------------------------------------------------- */

typedef struct shard {
    redis_cluster_node master;
    redis_cluster_node replicas[REDIS_CLUSTER_MAX_REPLICAS];
    size_t nreplicas;
} shard;

struct redis_cluster_map {
    uint16_t owner[REDIS_CLUSTER_SLOTS]; /* an index into shards, or NO_OWNER */
    shard *shards;
    size_t nshards, cap;
    int stale;
};

static redis_cluster_map *map_create(void)
{
    redis_cluster_map *map = calloc(1, sizeof(*map));
    if (!map)
        return NULL;
    for (int i = 0; i < REDIS_CLUSTER_SLOTS; i++)
        map->owner[i] = NO_OWNER;
    return map;
}

void redis_cluster_map_free(redis_cluster_map *map)
{
    if (!map)
        return;
    free(map->shards);
    free(map);
}

/* The index of the shard whose master is node, added when new; -1 when out
 * of memory. */
static int shard_of(redis_cluster_map *map, const redis_cluster_node *node)
{
    for (size_t i = 0; i < map->nshards; i++)
        if (redis_cluster_node_equal(&map->shards[i].master, node))
            return (int)i;
    shard *grown = array_grow(map->shards, &map->cap, map->nshards + 1, sizeof(*grown), 8);
    if (!grown)
        return -1;
    map->shards = grown;
    shard *s = &map->shards[map->nshards];
    memset(s, 0, sizeof(*s));
    s->master = *node;
    return (int)map->nshards++;
}

/* A node of CLUSTER SLOTS: [endpoint, port, id, metadata...]. Returns 1 when
 * read, 0 for an unknown endpoint ("?"), -1 when malformed. */
static int read_node(const redisReply *r, const char *answered_by, redis_cluster_node *out)
{
    if (r->type != REDIS_REPLY_ARRAY || r->elements < 2)
        return -1;
    const redisReply *host = r->element[0], *port = r->element[1];
    if (port->type != REDIS_REPLY_INTEGER || port->integer < 1 || port->integer > 65535)
        return -1;
    out->port = (int)port->integer;
    if (host->type == REDIS_REPLY_NIL || (host->type == REDIS_REPLY_STRING && host->len == 0))
        return set_host(out, answered_by, strlen(answered_by)) < 0 ? -1 : 1;
    if (host->type != REDIS_REPLY_STRING)
        return -1;
    if (host->len == 1 && host->str[0] == '?')
        return 0;
    return set_host(out, host->str, host->len) < 0 ? -1 : 1;
}

static void add_replica(shard *s, const redis_cluster_node *node)
{
    for (size_t i = 0; i < s->nreplicas; i++)
        if (redis_cluster_node_equal(&s->replicas[i], node))
            return;
    if (s->nreplicas < REDIS_CLUSTER_MAX_REPLICAS)
        s->replicas[s->nreplicas++] = *node;
}

redis_cluster_map *redis_cluster_map_from_slots(const redisReply *reply, const char *answered_by,
                                                char *err, size_t errlen)
{
    if (!reply || reply->type != REDIS_REPLY_ARRAY) {
        snprintf(err, errlen, "CLUSTER SLOTS: %s",
                 reply && reply->type == REDIS_REPLY_ERROR ? reply->str : "not an array");
        return NULL;
    }
    redis_cluster_map *map = map_create();
    if (!map) {
        snprintf(err, errlen, "CLUSTER SLOTS: out of memory");
        return NULL;
    }
    for (size_t i = 0; i < reply->elements; i++) {
        const redisReply *e = reply->element[i];
        if (e->type != REDIS_REPLY_ARRAY || e->elements < 3 ||
            e->element[0]->type != REDIS_REPLY_INTEGER ||
            e->element[1]->type != REDIS_REPLY_INTEGER) {
            snprintf(err, errlen, "CLUSTER SLOTS: entry %zu is not [start, end, master, ...]", i);
            goto fail;
        }
        long long from = e->element[0]->integer, to = e->element[1]->integer;
        if (from < 0 || to < from || to >= REDIS_CLUSTER_SLOTS) {
            snprintf(err, errlen, "CLUSTER SLOTS: entry %zu has slots %lld-%lld", i, from, to);
            goto fail;
        }
        redis_cluster_node master;
        int known = read_node(e->element[2], answered_by, &master);
        if (known < 0) {
            snprintf(err, errlen, "CLUSTER SLOTS: entry %zu has a malformed master", i);
            goto fail;
        }
        if (!known)
            continue; /* its slots stay without owner */
        int idx = shard_of(map, &master);
        if (idx < 0) {
            snprintf(err, errlen, "CLUSTER SLOTS: out of memory");
            goto fail;
        }
        for (size_t k = 3; k < e->elements; k++) {
            redis_cluster_node replica;
            int got = read_node(e->element[k], answered_by, &replica);
            if (got < 0) {
                snprintf(err, errlen, "CLUSTER SLOTS: entry %zu has a malformed replica", i);
                goto fail;
            }
            if (got)
                add_replica(&map->shards[idx], &replica);
        }
        for (long long s = from; s <= to; s++)
            map->owner[s] = (uint16_t)idx;
    }
    return map;
fail:
    redis_cluster_map_free(map);
    return NULL;
}

static const shard *owner_of(const redis_cluster_map *map, int slot)
{
    if (!map || slot < 0 || slot >= REDIS_CLUSTER_SLOTS || map->owner[slot] == NO_OWNER)
        return NULL;
    return &map->shards[map->owner[slot]];
}

const redis_cluster_node *redis_cluster_map_master(const redis_cluster_map *map, int slot)
{
    const shard *s = owner_of(map, slot);
    return s ? &s->master : NULL;
}

const redis_cluster_node *redis_cluster_map_master_of_key(const redis_cluster_map *map,
                                                          const char *key, size_t len)
{
    return redis_cluster_map_master(map, redis_cluster_slot(key, len));
}

const redis_cluster_node *redis_cluster_map_replicas(const redis_cluster_map *map, int slot,
                                                     size_t *n)
{
    const shard *s = owner_of(map, slot);
    *n = s ? s->nreplicas : 0;
    return s ? s->replicas : NULL;
}

size_t redis_cluster_map_masters(const redis_cluster_map *map)
{
    return map->nshards;
}

const redis_cluster_node *redis_cluster_map_master_at(const redis_cluster_map *map, size_t index)
{
    return index < map->nshards ? &map->shards[index].master : NULL;
}

int redis_cluster_map_unowned(const redis_cluster_map *map)
{
    int n = 0;
    for (int i = 0; i < REDIS_CLUSTER_SLOTS; i++)
        n += map->owner[i] == NO_OWNER;
    return n;
}

int redis_cluster_map_stale(const redis_cluster_map *map)
{
    return map->stale;
}

/* --- redirects -------------------------------------------------------------- */

/* "<slot> <host>:<port>" of exactly len bytes. */
static int parse_target(const char *s, size_t len, redis_cluster_redirect *out)
{
    const char *space = memchr(s, ' ', len);
    if (!space)
        return -1;
    int64_t slot;
    size_t slotlen = (size_t)(space - s);
    if (slotlen == 0 || slotlen > 5 || validate_i64(s, slotlen, &slot) < 0 || slot < 0 ||
        slot >= REDIS_CLUSTER_SLOTS)
        return -1;
    const char *addr = space + 1, *end = s + len, *colon = NULL;
    for (const char *p = end; p > addr; p--)
        if (p[-1] == ':') {
            colon = p - 1;
            break;
        }
    if (!colon || memchr(addr, ' ', (size_t)(end - addr)))
        return -1;
    int port = parse_port(colon + 1, (size_t)(end - colon - 1));
    if (port < 0 || set_host(&out->node, addr, (size_t)(colon - addr)) < 0)
        return -1;
    out->slot = (int)slot;
    out->node.port = port;
    return 0;
}

redis_cluster_redirect_kind redis_cluster_redirect_parse(const char *str, size_t len,
                                                         redis_cluster_redirect *out)
{
    static const struct {
        const char *prefix;
        redis_cluster_redirect_kind kind;
    } kinds[] = {{"MOVED ", REDIS_CLUSTER_MOVED}, {"ASK ", REDIS_CLUSTER_ASK}};
    memset(out, 0, sizeof(*out));
    out->slot = -1;
    for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
        size_t n = strlen(kinds[i].prefix);
        if (len > n && memcmp(str, kinds[i].prefix, n) == 0) {
            if (parse_target(str + n, len - n, out) < 0) {
                memset(out, 0, sizeof(*out));
                out->slot = -1;
                return REDIS_CLUSTER_NOT_REDIRECT;
            }
            return out->kind = kinds[i].kind;
        }
    }
    if (len >= 8 && memcmp(str, "TRYAGAIN", 8) == 0 && (len == 8 || str[8] == ' '))
        return out->kind = REDIS_CLUSTER_TRYAGAIN;
    return REDIS_CLUSTER_NOT_REDIRECT;
}

void redis_cluster_attempt_init(redis_cluster_attempt *a, int max_redirects)
{
    a->redirects = 0;
    a->max_redirects = max_redirects > 0 ? max_redirects : REDIS_CLUSTER_MAX_REDIRECTS;
}

redis_cluster_action redis_cluster_follow(redis_cluster_map *map, redis_cluster_attempt *a,
                                          const char *str, size_t len,
                                          const redis_cluster_node *current,
                                          redis_cluster_node *next)
{
    redis_cluster_redirect r;
    if (redis_cluster_redirect_parse(str, len, &r) == REDIS_CLUSTER_NOT_REDIRECT)
        return REDIS_CLUSTER_DELIVER;
    if (a->redirects >= a->max_redirects)
        return REDIS_CLUSTER_TOO_MANY;
    a->redirects++;
    if (r.kind == REDIS_CLUSTER_TRYAGAIN) {
        *next = *current;
        return REDIS_CLUSTER_RETRY_LATER;
    }
    if (r.node.host[0] == '\0')
        memcpy(r.node.host, current->host, sizeof(r.node.host));
    *next = r.node;
    if (r.kind == REDIS_CLUSTER_ASK)
        return REDIS_CLUSTER_RETRY_ASKING;
    /* MOVED: the slot has a new owner for good. Record it now, so the next
     * command of the slot goes straight there, and ask for a full refresh:
     * one slot moved rarely moves alone (a reshard, a failover). */
    int idx = shard_of(map, &r.node);
    if (idx >= 0)
        map->owner[r.slot] = (uint16_t)idx;
    map->stale = 1;
    return REDIS_CLUSTER_RETRY;
}
