/* redis_cluster.h: the slot router's groundwork for Redis Cluster (issue 14):
 * key slots (CRC16 with hash tags), the slot map read from CLUSTER SLOTS,
 * MOVED/ASK redirects and what a caller does about them, and the seeds of
 * the config key redis_cluster. Pure: it is tested by feeding it replies
 * (the map is fetched by backend_redis_cluster_map). */
#ifndef SECKILL_REDIS_CLUSTER_H
#define SECKILL_REDIS_CLUSTER_H

#include <stddef.h>
#include <stdint.h>

#include <hiredis/hiredis.h>

#define REDIS_CLUSTER_SLOTS 16384
#define REDIS_CLUSTER_HOST_MAX 256    /* a host name or address, NUL included */
#define REDIS_CLUSTER_MAX_SEEDS 64    /* entries of redis_cluster at most */
#define REDIS_CLUSTER_MAX_REPLICAS 8  /* replicas kept per master; more are left out */
#define REDIS_CLUSTER_MAX_REDIRECTS 5 /* MOVED/ASK/TRYAGAIN followed per command by default */

/* CRC16-CCITT (XMODEM: polynomial 0x1021, initial value 0), as the cluster
 * specification defines it: crc16("123456789") is 0x31C3. */
uint16_t redis_cluster_crc16(const char *buf, size_t len);

/* The slot (0..16383) of a key: CRC16 mod 16384 of its hash tag, the bytes
 * between the first '{' and the first '}' after it when there are any, else
 * of the whole key ("{}" and "{" alone hash the whole key). */
int redis_cluster_slot(const char *key, size_t len);

/* A node's address. An empty host means "the host the answer came from". */
typedef struct redis_cluster_node {
    char host[REDIS_CLUSTER_HOST_MAX];
    int port;
} redis_cluster_node;

/* Whether two nodes are the same address. */
int redis_cluster_node_equal(const redis_cluster_node *a, const redis_cluster_node *b);

/* --- seeds: the config key redis_cluster ---------------------------------- */

/* Parses "host:port,host:port,..." (spaces around entries allowed; an IPv6
 * address in brackets: "[::1]:7000") into at most cap nodes. An empty or
 * blank text is no seeds: a single Redis. Returns the number of seeds, or -1
 * with err saying which entry is wrong and why. */
int redis_cluster_seeds_parse(const char *text, redis_cluster_node *out, size_t cap, char *err,
                              size_t errlen);

/* --- the slot map --------------------------------------------------------- */

/* Which nodes serve slots: one entry per master, its replicas beside it. */
typedef struct redis_cluster_map redis_cluster_map;

/* Builds a map from a CLUSTER SLOTS reply: each entry [start, end, master,
 * replica...], a node [endpoint, port, id, metadata...]. A NULL
 * or empty endpoint is read as `answered_by` (the host that answered: the
 * specification's "same endpoint" cases); a node whose endpoint is "?" is
 * unknown and left out (its slots stay without owner). CLUSTER SLOTS rather
 * than CLUSTER SHARDS: its reply is the router's table as it stands (ranges,
 * master first), it exists since Redis 3.0 (a shop's older cluster works
 * too), and what SHARDS adds (per-node health, offsets) does not change
 * where a command goes. Returns the map (redis_cluster_map_free), or NULL
 * with err. */
redis_cluster_map *redis_cluster_map_from_slots(const redisReply *reply, const char *answered_by,
                                                char *err, size_t errlen);

void redis_cluster_map_free(redis_cluster_map *map);

/* The master of slot, or NULL when no known node serves it. The pointer
 * stays valid until the map changes (redis_cluster_follow) or is freed. */
const redis_cluster_node *redis_cluster_map_master(const redis_cluster_map *map, int slot);

/* The master of the slot of key (redis_cluster_slot), or NULL. */
const redis_cluster_node *redis_cluster_map_master_of_key(const redis_cluster_map *map,
                                                          const char *key, size_t len);

/* The replicas of slot's master as CLUSTER SLOTS listed them; *n their
 * number (0 when the slot has no owner). Redis lists only the replicas that
 * are not failed and have replicated something (a fresh, idle cluster's
 * replicas may be missing for seconds): for reads, not for an inventory. */
const redis_cluster_node *redis_cluster_map_replicas(const redis_cluster_map *map, int slot,
                                                     size_t *n);

/* The distinct masters of the map, in the order first seen; index < count. */
size_t redis_cluster_map_masters(const redis_cluster_map *map);
const redis_cluster_node *redis_cluster_map_master_at(const redis_cluster_map *map, size_t index);

/* How many slots have no known owner (0: the map covers every slot). */
int redis_cluster_map_unowned(const redis_cluster_map *map);

/* Set when a MOVED showed the map outdated: the caller should fetch a new map
 * in full (the one slot named is updated already). A new map starts clear. */
int redis_cluster_map_stale(const redis_cluster_map *map);

/* --- redirects ------------------------------------------------------------ */

typedef enum redis_cluster_redirect_kind {
    REDIS_CLUSTER_NOT_REDIRECT = 0, /* any other reply or error: it is the answer */
    REDIS_CLUSTER_MOVED,            /* "MOVED <slot> <host>:<port>": the slot lives there now */
    REDIS_CLUSTER_ASK,              /* "ASK <slot> <host>:<port>": this once, ask there */
    REDIS_CLUSTER_TRYAGAIN          /* "TRYAGAIN ...": keys of one command split by a migration */
} redis_cluster_redirect_kind;

typedef struct redis_cluster_redirect {
    redis_cluster_redirect_kind kind;
    int slot;                /* MOVED, ASK */
    redis_cluster_node node; /* MOVED, ASK; an empty host: the node that answered */
} redis_cluster_redirect;

/* Reads an error reply's text (redisReply's str, len). Anything that is not
 * exactly a well-formed MOVED or ASK (slot in range, port 1..65535) or a
 * TRYAGAIN is REDIS_CLUSTER_NOT_REDIRECT. Returns the kind, also in out. */
redis_cluster_redirect_kind redis_cluster_redirect_parse(const char *str, size_t len,
                                                         redis_cluster_redirect *out);

/* What the caller does next with a command whose reply was an error. */
typedef enum redis_cluster_action {
    REDIS_CLUSTER_DELIVER = 0,  /* not a redirect: the error is the command's answer */
    REDIS_CLUSTER_RETRY,        /* send the command again to *next (after MOVED) */
    REDIS_CLUSTER_RETRY_ASKING, /* send ASKING then the command to *next, once (after ASK) */
    REDIS_CLUSTER_RETRY_LATER,  /* TRYAGAIN: send it again to the same node after a pause */
    REDIS_CLUSTER_TOO_MANY      /* the bound of redirects is reached: fail the command */
} redis_cluster_action;

/* One command's journey: how many redirects it has followed, and its bound. */
typedef struct redis_cluster_attempt {
    int redirects;
    int max_redirects;
} redis_cluster_attempt;

/* A command's first attempt, bounded by max_redirects (<= 0: the default). */
void redis_cluster_attempt_init(redis_cluster_attempt *a, int max_redirects);

/* The decision after an error reply str/len from node `current`: on MOVED the
 * map's owner of the slot becomes the named node (a master the map did not
 * know is added) and the map is flagged stale (a full refresh is due), *next
 * is that node; on ASK *next is the named node and the map is unchanged (the
 * slot is only migrating); on TRYAGAIN *next is current. Each of the three
 * counts against the attempt's bound. An empty host in a redirect is
 * current's host. */
redis_cluster_action redis_cluster_follow(redis_cluster_map *map, redis_cluster_attempt *a,
                                          const char *str, size_t len,
                                          const redis_cluster_node *current,
                                          redis_cluster_node *next);

#endif
