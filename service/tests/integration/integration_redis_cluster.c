/* integration_redis_cluster.c: redis_cluster.c against a real Redis Cluster
 * of 3 masters and 3 replicas (services.sh cluster-start): the slot map
 * backend.c reads with it agrees with CLUSTER KEYSLOT and CLUSTER NODES, a command sent where
 * it says is never redirected, and a slot moved between masters answers a
 * client holding the old map with a real ASK during the move and a real
 * MOVED after it, which the module's decisions follow to the slot's owner.
 * Then redis_nodes.c on the same cluster: commands, pipelines, scans and
 * scripts reach the master serving each key, a killed connection is remade,
 * and a slot on the move is followed through ASK, TRYAGAIN and MOVED.
 *
 * One cluster serves the whole suite (started before the first test, stopped
 * after the last: a start costs seconds); each test that moves a slot moves
 * one nobody else looks at. */
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <hiredis/hiredis.h>

#include "backend.h"
#include "clock.h"
#include "harness.h"
#include "harness_suite.h"
#include "keys.h"
#include "redis_cluster.h"
#include "redis_nodes.h"
#include "scripts.h"

HARNESS_CLUSTER_SUITE();

TestSuite(cluster, .timeout = 120);

typedef struct cluster {
    redis_cluster_node seeds[16];
    int nseeds;
    redis_cluster_map *map;
} cluster;

static void cluster_open(cluster *cl)
{
    const char *text = harness_cluster_seeds();
    char err[512];
    cl->nseeds = redis_cluster_seeds_parse(text, cl->seeds, 16, err, sizeof(err));
    cr_assert_eq(cl->nseeds, 6, "seeds '%s': %s", text, err);
    cl->map =
        backend_redis_cluster_map(cl->seeds, (size_t)cl->nseeds, 2000, NULL, err, sizeof(err));
    cr_assert_not_null(cl->map, "%s", err);
}

static void cluster_close(cluster *cl)
{
    redis_cluster_map_free(cl->map);
}

static redisContext *connect_to(const redis_cluster_node *n)
{
    struct timeval tv = {5, 0};
    redisContext *c = redisConnectWithTimeout(n->host, n->port, tv);
    cr_assert(c && !c->err, "connect %s:%d: %s", n->host, n->port, c ? c->errstr : "no memory");
    redisSetTimeout(c, tv);
    return c;
}

/* The reply of a command that must not fail to arrive; the caller frees it. */
static redisReply *command(redisContext *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    redisReply *r = redisvCommand(c, fmt, ap);
    va_end(ap);
    cr_assert_not_null(r, "%s: %s", fmt, c->errstr);
    return r;
}

static void expect_status(redisContext *c, const char *what, redisReply *r)
{
    (void)c;
    cr_assert(r->type == REDIS_REPLY_STATUS, "%s: %s", what,
              r->type == REDIS_REPLY_ERROR ? r->str : "not a status");
    freeReplyObject(r);
}

static void node_id(redisContext *c, char *id, size_t cap)
{
    redisReply *r = command(c, "CLUSTER MYID");
    cr_assert_eq(r->type, REDIS_REPLY_STRING);
    snprintf(id, cap, "%s", r->str);
    freeReplyObject(r);
}

/* --- CLUSTER NODES, read the plain way --------------------------------------- */

typedef struct nodes_view {
    struct {
        char id[64], master_id[64];
        redis_cluster_node addr;
        int is_master;
    } node[16];
    int n;
    int owner[REDIS_CLUSTER_SLOTS]; /* index into node, -1: none */
} nodes_view;

/* Each line: <id> <ip:port@bus> <flags> <master id or -> <ping> <pong> <epoch>
 * <link> <slot or from-to>... (and [slot->-id] for a migration, skipped). */
static void read_nodes(redisContext *c, nodes_view *v)
{
    memset(v, 0, sizeof(*v));
    for (int i = 0; i < REDIS_CLUSTER_SLOTS; i++)
        v->owner[i] = -1;
    redisReply *r = command(c, "CLUSTER NODES");
    cr_assert_eq(r->type, REDIS_REPLY_STRING);
    char *save = NULL;
    for (char *line = strtok_r(r->str, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        cr_assert_lt(v->n, 16);
        char addr[128], flags[128];
        int used = 0;
        cr_assert_eq(sscanf(line, "%63s %127s %127s %63s %*s %*s %*s %*s%n", v->node[v->n].id, addr,
                            flags, v->node[v->n].master_id, &used),
                     4, "line '%s'", line);
        char *at = strchr(addr, '@'), *colon = strrchr(addr, ':');
        cr_assert(at && colon && colon < at, "address '%s'", addr);
        *at = '\0';
        v->node[v->n].addr.port = atoi(colon + 1);
        *colon = '\0';
        snprintf(v->node[v->n].addr.host, sizeof(v->node[v->n].addr.host), "%s", addr);
        v->node[v->n].is_master = strstr(flags, "master") != NULL;
        for (char *p = line + used; *p;) {
            while (*p == ' ')
                p++;
            if (!*p || *p == '[')
                break;
            char *end;
            long from = strtol(p, &end, 10), to = from;
            if (*end == '-')
                to = strtol(end + 1, &end, 10);
            for (long s = from; s <= to; s++)
                v->owner[s] = v->n;
            p = end;
        }
        v->n++;
    }
    freeReplyObject(r);
}

static int view_index(const nodes_view *v, const redis_cluster_node *n)
{
    for (int i = 0; i < v->n; i++)
        if (redis_cluster_node_equal(&v->node[i].addr, n))
            return i;
    return -1;
}

/* --- the tests ----------------------------------------------------------------- */

Test(cluster, the_module_hashes_thousands_of_keys_to_the_slots_cluster_keyslot_gives)
{
    cluster cl;
    cluster_open(&cl);
    redisContext *c = connect_to(&cl.seeds[0]);
    enum { KEYS = 4000 };
    char key[KEYS][64];
    for (int i = 0; i < KEYS; i++) {
        /* Plain keys, the product's tagged ones, and tags at odd places. */
        switch (i % 4) {
        case 0:
            snprintf(key[i], sizeof(key[i]), "key:%d", i);
            break;
        case 1:
            snprintf(key[i], sizeof(key[i]), "{item:%d}:state", i);
            break;
        case 2:
            snprintf(key[i], sizeof(key[i]), "a{%d}b{c}", i * 7919);
            break;
        default:
            snprintf(key[i], sizeof(key[i]), "x{}{%d}y%c", i, "{}"[i & 1]);
        }
        redisAppendCommand(c, "CLUSTER KEYSLOT %s", key[i]);
    }
    for (int i = 0; i < KEYS; i++) {
        redisReply *r = NULL;
        cr_assert_eq(redisGetReply(c, (void **)&r), REDIS_OK, "%s", c->errstr);
        cr_assert_eq(r->type, REDIS_REPLY_INTEGER);
        cr_assert_eq(redis_cluster_slot(key[i], strlen(key[i])), (int)r->integer,
                     "key %s: %d, Redis says %lld", key[i],
                     redis_cluster_slot(key[i], strlen(key[i])), r->integer);
        freeReplyObject(r);
    }
    redisFree(c);
    cluster_close(&cl);
}

Test(cluster, the_slot_map_names_the_master_cluster_nodes_gives_every_slot)
{
    cluster cl;
    cluster_open(&cl);
    cr_assert_eq(redis_cluster_map_unowned(cl.map), 0);
    cr_assert_eq(redis_cluster_map_masters(cl.map), 3);
    redisContext *c = connect_to(&cl.seeds[0]);
    static nodes_view v;
    read_nodes(c, &v);
    redisFree(c);
    cr_assert_eq(v.n, 6);
    for (int s = 0; s < REDIS_CLUSTER_SLOTS; s++) {
        const redis_cluster_node *m = redis_cluster_map_master(cl.map, s);
        cr_assert_not_null(m, "slot %d", s);
        cr_assert_geq(v.owner[s], 0, "slot %d has no owner in CLUSTER NODES", s);
        cr_assert(redis_cluster_node_equal(m, &v.node[v.owner[s]].addr),
                  "slot %d: map says %s:%d, CLUSTER NODES %s:%d", s, m->host, m->port,
                  v.node[v.owner[s]].addr.host, v.node[v.owner[s]].addr.port);
        /* The replicas CLUSTER SLOTS lists (only those that have replicated
         * something) are replicas of that very master. */
        size_t n;
        const redis_cluster_node *replicas = redis_cluster_map_replicas(cl.map, s, &n);
        for (size_t k = 0; k < n; k++) {
            int i = view_index(&v, &replicas[k]);
            cr_assert_geq(i, 0);
            cr_assert_str_eq(v.node[i].master_id, v.node[v.owner[s]].id);
        }
    }
    cluster_close(&cl);
}

Test(cluster, a_seed_that_is_down_is_skipped_and_all_seeds_down_is_an_error_naming_each)
{
    cluster cl;
    cluster_open(&cl);
    char err[1024];
    int closed = harness_free_port();
    redis_cluster_node seeds[2] = {{"127.0.0.1", closed}, cl.seeds[3]};
    redis_cluster_map *map = backend_redis_cluster_map(seeds, 2, 1000, NULL, err, sizeof(err));
    cr_assert_not_null(map, "%s", err);
    for (int s = 0; s < REDIS_CLUSTER_SLOTS; s += 97)
        cr_assert(redis_cluster_node_equal(redis_cluster_map_master(map, s),
                                           redis_cluster_map_master(cl.map, s)),
                  "slot %d: a replica's map and a master's disagree", s);
    redis_cluster_map_free(map);
    cr_assert_null(backend_redis_cluster_map(seeds, 1, 1000, NULL, err, sizeof(err)));
    char want[64];
    snprintf(want, sizeof(want), "127.0.0.1:%d: ", closed);
    cr_assert(strstr(err, want), "%s", err);
    cluster_close(&cl);
}

Test(cluster, a_plain_redis_is_no_cluster_and_says_so)
{
    config cfg;
    harness_config(&cfg);
    redis_cluster_node plain = {"", cfg.redis_port};
    snprintf(plain.host, sizeof(plain.host), "%s", cfg.redis_host);
    config_free(&cfg);
    char err[512];
    cr_assert_null(backend_redis_cluster_map(&plain, 1, 1000, NULL, err, sizeof(err)));
    cr_assert(strstr(err, "cluster support disabled"), "%s", err);
}

/* The seeds are reached by the one connect and AUTH (backend.c): a wrong
 * password is a failure that names the seed and AUTH, and the right one
 * gets as far as CLUSTER SLOTS (a plain Redis, which is no cluster). */
Test(cluster, a_seed_that_asks_for_a_password_is_authenticated_and_a_wrong_one_named)
{
    redis_cluster_node seed = {"127.0.0.1", harness_redis_auth_start("seed-word")};
    char err[512], want[64];
    cr_assert_null(backend_redis_cluster_map(&seed, 1, 1000, "wrong-word", err, sizeof(err)));
    snprintf(want, sizeof(want), "redis 127.0.0.1:%d: AUTH: ", seed.port);
    cr_assert(strstr(err, want), "%s", err);
    cr_assert_null(backend_redis_cluster_map(&seed, 1, 1000, "seed-word", err, sizeof(err)));
    snprintf(want, sizeof(want), "redis 127.0.0.1:%d: CLUSTER SLOTS: ", seed.port);
    cr_assert(strstr(err, want), "%s", err);
    cr_assert(strstr(err, "cluster support disabled"), "%s", err);
    harness_redis_auth_stop();
}

Test(cluster, a_set_sent_to_the_master_the_map_names_is_never_moved)
{
    cluster cl;
    cluster_open(&cl);
    size_t masters = redis_cluster_map_masters(cl.map);
    redisContext *conn[3];
    int sent[3] = {0};
    for (size_t m = 0; m < masters; m++)
        conn[m] = connect_to(redis_cluster_map_master_at(cl.map, m));
    enum { KEYS = 3000 };
    for (int i = 0; i < KEYS; i++) {
        char key[64];
        snprintf(key, sizeof(key), "{item:%d}:state", i);
        const redis_cluster_node *owner = redis_cluster_map_master_of_key(cl.map, key, strlen(key));
        for (size_t m = 0; m < masters; m++)
            if (owner == redis_cluster_map_master_at(cl.map, m)) {
                redisAppendCommand(conn[m], "SET %s %d", key, i);
                sent[m]++;
            }
    }
    for (size_t m = 0; m < masters; m++) {
        cr_assert_gt(sent[m], KEYS / 6, "the keys spread over every master");
        for (int i = 0; i < sent[m]; i++) {
            redisReply *r = NULL;
            cr_assert_eq(redisGetReply(conn[m], (void **)&r), REDIS_OK);
            cr_assert_eq(r->type, REDIS_REPLY_STATUS, "%s",
                         r->type == REDIS_REPLY_ERROR ? r->str : "not OK");
            freeReplyObject(r);
        }
    }
    /* And the wrong master answers a real MOVED that names the right one. */
    const char *key = "{item:1}:state";
    const redis_cluster_node *owner = redis_cluster_map_master_of_key(cl.map, key, strlen(key));
    size_t wrong = owner == redis_cluster_map_master_at(cl.map, 0) ? 1 : 0;
    redisReply *r = command(conn[wrong], "GET %s", key);
    cr_assert_eq(r->type, REDIS_REPLY_ERROR);
    redis_cluster_redirect rd;
    cr_assert_eq(redis_cluster_redirect_parse(r->str, r->len, &rd), REDIS_CLUSTER_MOVED, "%s",
                 r->str);
    cr_assert_eq(rd.slot, redis_cluster_slot(key, strlen(key)));
    cr_assert(redis_cluster_node_equal(&rd.node, owner), "%s", r->str);
    freeReplyObject(r);
    for (size_t m = 0; m < masters; m++)
        redisFree(conn[m]);
    cluster_close(&cl);
}

/* Sends `GET key` as a client holding map would, following the module's
 * decisions; returns the final reply's string (into out) and the number of
 * hops, and what the first answer asked for in *first. */
static int get_following(redis_cluster_map *map, const char *key, char *out, size_t cap,
                         redis_cluster_action *first, redis_cluster_node *landed)
{
    redis_cluster_attempt a;
    redis_cluster_attempt_init(&a, 0);
    redis_cluster_node at = *redis_cluster_map_master_of_key(map, key, strlen(key));
    int asking = 0, hops = 0;
    *first = REDIS_CLUSTER_DELIVER;
    for (;;) {
        redisContext *c = connect_to(&at);
        if (asking)
            expect_status(c, "ASKING", command(c, "ASKING"));
        redisReply *r = command(c, "GET %s", key);
        redisFree(c);
        redis_cluster_node next;
        redis_cluster_action act = r->type == REDIS_REPLY_ERROR
                                       ? redis_cluster_follow(map, &a, r->str, r->len, &at, &next)
                                       : REDIS_CLUSTER_DELIVER;
        if (hops == 0)
            *first = act;
        if (act == REDIS_CLUSTER_DELIVER) {
            cr_assert_eq(r->type, REDIS_REPLY_STRING, "GET %s: %s", key,
                         r->type == REDIS_REPLY_ERROR ? r->str : "not a string");
            snprintf(out, cap, "%s", r->str);
            freeReplyObject(r);
            *landed = at;
            return hops;
        }
        freeReplyObject(r);
        cr_assert(act == REDIS_CLUSTER_RETRY || act == REDIS_CLUSTER_RETRY_ASKING,
                  "unexpected action %d", act);
        asking = act == REDIS_CLUSTER_RETRY_ASKING;
        at = next;
        hops++;
    }
}

Test(cluster, a_slot_being_moved_answers_ask_then_moved_and_the_decisions_reach_its_owner)
{
    cluster cl;
    cluster_open(&cl);
    /* A slot of its own: a tag no other test uses. */
    const char *moved_key = "{migrating}:a", *staying_key = "{migrating}:b";
    int slot = redis_cluster_slot(moved_key, strlen(moved_key));
    const redis_cluster_node *src_node = redis_cluster_map_master(cl.map, slot);
    redis_cluster_node source = *src_node, target = *redis_cluster_map_master_at(cl.map, 0);
    if (redis_cluster_node_equal(&target, &source))
        target = *redis_cluster_map_master_at(cl.map, 1);
    redisContext *src = connect_to(&source), *dst = connect_to(&target);
    char src_id[64], dst_id[64];
    node_id(src, src_id, sizeof(src_id));
    node_id(dst, dst_id, sizeof(dst_id));
    expect_status(src, "SET", command(src, "SET %s moved", moved_key));
    expect_status(src, "SET", command(src, "SET %s staying", staying_key));

    /* The move begins: target imports, source migrates, one key goes. */
    expect_status(dst, "IMPORTING", command(dst, "CLUSTER SETSLOT %d IMPORTING %s", slot, src_id));
    expect_status(src, "MIGRATING", command(src, "CLUSTER SETSLOT %d MIGRATING %s", slot, dst_id));
    expect_status(src, "MIGRATE",
                  command(src, "MIGRATE %s %d %s 0 5000", target.host, target.port, moved_key));

    /* During: the key that went is asked for at the target, once, after
     * ASKING; the map stays as it was. */
    redis_cluster_map *old = cl.map;
    char value[64];
    redis_cluster_action first;
    redis_cluster_node landed;
    int hops = get_following(old, moved_key, value, sizeof(value), &first, &landed);
    cr_assert_eq(first, REDIS_CLUSTER_RETRY_ASKING, "a real ASK");
    cr_assert_eq(hops, 1);
    cr_assert_str_eq(value, "moved");
    cr_assert(redis_cluster_node_equal(&landed, &target));
    cr_assert(redis_cluster_node_equal(redis_cluster_map_master(old, slot), &source));
    cr_assert_eq(redis_cluster_map_stale(old), 0);
    /* Without ASKING the target does not serve a slot it only imports. */
    redisReply *r = command(dst, "GET %s", moved_key);
    redis_cluster_redirect rd;
    cr_assert_eq(r->type, REDIS_REPLY_ERROR);
    cr_assert_eq(redis_cluster_redirect_parse(r->str, r->len, &rd), REDIS_CLUSTER_MOVED, "%s",
                 r->str);
    cr_assert(redis_cluster_node_equal(&rd.node, &source), "%s", r->str);
    freeReplyObject(r);
    /* A key still at the source is served there, without a redirect... */
    hops = get_following(old, staying_key, value, sizeof(value), &first, &landed);
    cr_assert_eq(hops, 0);
    cr_assert_str_eq(value, "staying");
    /* ...and a command over both keys, split by the move, is told to retry
     * later: what a script over one item's keys meets during a reshard. */
    r = command(src, "MGET %s %s", moved_key, staying_key);
    cr_assert_eq(r->type, REDIS_REPLY_ERROR);
    cr_assert_eq(redis_cluster_redirect_parse(r->str, r->len, &rd), REDIS_CLUSTER_TRYAGAIN, "%s",
                 r->str);
    freeReplyObject(r);

    /* The move ends: the rest goes, and the slot is the target's, told to
     * the target first, then the source, then the third master. */
    expect_status(src, "MIGRATE",
                  command(src, "MIGRATE %s %d %s 0 5000", target.host, target.port, staying_key));
    expect_status(dst, "NODE", command(dst, "CLUSTER SETSLOT %d NODE %s", slot, dst_id));
    expect_status(src, "NODE", command(src, "CLUSTER SETSLOT %d NODE %s", slot, dst_id));
    for (size_t m = 0; m < redis_cluster_map_masters(cl.map); m++) {
        const redis_cluster_node *n = redis_cluster_map_master_at(cl.map, m);
        if (redis_cluster_node_equal(n, &target) || redis_cluster_node_equal(n, &source))
            continue;
        redisContext *third = connect_to(n);
        expect_status(third, "NODE", command(third, "CLUSTER SETSLOT %d NODE %s", slot, dst_id));
        redisFree(third);
    }

    /* After: the old map gets a real MOVED; the decision records the new
     * owner, asks for a refresh, and the retry lands at the target. */
    hops = get_following(old, staying_key, value, sizeof(value), &first, &landed);
    cr_assert_eq(first, REDIS_CLUSTER_RETRY, "a real MOVED");
    cr_assert_eq(hops, 1);
    cr_assert_str_eq(value, "staying");
    cr_assert(redis_cluster_node_equal(&landed, &target));
    cr_assert(redis_cluster_node_equal(redis_cluster_map_master(old, slot), &target));
    cr_assert_eq(redis_cluster_map_stale(old), 1);
    /* The updated map needs no redirect any more. */
    hops = get_following(old, moved_key, value, sizeof(value), &first, &landed);
    cr_assert_eq(hops, 0);
    cr_assert_str_eq(value, "moved");

    /* And a map fetched afresh from the masters says so too. */
    redis_cluster_node masters[2] = {source, target};
    char err[512];
    redis_cluster_map *fresh = backend_redis_cluster_map(masters, 2, 2000, NULL, err, sizeof(err));
    cr_assert_not_null(fresh, "%s", err);
    cr_assert(redis_cluster_node_equal(redis_cluster_map_master(fresh, slot), &target));
    cr_assert_eq(redis_cluster_map_stale(fresh), 0);
    redis_cluster_map_free(fresh);

    redisFree(src);
    redisFree(dst);
    cluster_close(&cl);
}

/* --- redis_nodes.c on the cluster ---------------------------------------------- */

/* A config whose redis_cluster names the cluster's six nodes. */
static void cluster_config(config *cfg)
{
    harness_cluster_config(cfg);
}

static redis_nodes *nodes_open(config *cfg)
{
    cluster_config(cfg);
    redis_nodes *rn = redis_nodes_create(cfg, "test");
    cr_assert_not_null(rn);
    cr_assert(redis_nodes_is_cluster(rn));
    return rn;
}

static void nodes_close(redis_nodes *rn, config *cfg)
{
    redis_nodes_free(rn);
    config_free(cfg);
}

/* Whether c is a connection to node n. */
static int connected_to(const redisContext *c, const redis_cluster_node *n)
{
    return c && c->tcp.port == n->port && strcmp(c->tcp.host, n->host) == 0;
}

/* The reply of command argv (argc entries) about key through rn, which must
 * arrive; the caller frees it. */
static redisReply *nodes_command(redis_nodes *rn, const char *key, int argc, const char **argv)
{
    redisReply *r = redis_nodes_command(rn, key, argc, argv, NULL);
    cr_assert_not_null(r, "%s %s through redis_nodes", argv[0], key);
    return r;
}

static void nodes_set(redis_nodes *rn, const char *key, const char *value)
{
    const char *argv[] = {"SET", key, value};
    expect_status(NULL, "SET", nodes_command(rn, key, 3, argv));
}

/* GET key through rn equals want. */
static void nodes_expect(redis_nodes *rn, const char *key, const char *want)
{
    const char *argv[] = {"GET", key};
    redisReply *r = nodes_command(rn, key, 2, argv);
    cr_assert_eq(r->type, REDIS_REPLY_STRING, "GET %s", key);
    cr_assert_str_eq(r->str, want, "GET %s", key);
    freeReplyObject(r);
}

/* The index among the masters of cl.map of the one that serves key: the
 * one whose plain GET answers want rather than a MOVED (the cluster's own
 * word, whatever any map says). */
static size_t owner_by_get(redisContext **masters, size_t n, const char *key, const char *want)
{
    size_t owner = n;
    for (size_t m = 0; m < n; m++) {
        redisReply *r = command(masters[m], "GET %s", key);
        if (r->type == REDIS_REPLY_STRING) {
            cr_assert_str_eq(r->str, want, "GET %s", key);
            cr_assert_eq(owner, n, "%s is served by two masters", key);
            owner = m;
        } else {
            cr_assert_eq(r->type, REDIS_REPLY_ERROR, "GET %s", key);
            cr_assert(strncmp(r->str, "MOVED ", 6) == 0, "%s", r->str);
        }
        freeReplyObject(r);
    }
    cr_assert_lt(owner, n, "no master serves %s", key);
    return owner;
}

Test(cluster, redis_nodes_sends_thousands_of_keys_to_the_master_that_serves_each)
{
    cluster cl;
    cluster_open(&cl);
    config cfg;
    redis_nodes *rn = nodes_open(&cfg);
    size_t n = redis_cluster_map_masters(cl.map);
    cr_assert_eq(redis_nodes_count(rn), n);
    redisContext *plain[3];
    for (size_t m = 0; m < n; m++) {
        plain[m] = connect_to(redis_cluster_map_master_at(cl.map, m));
        /* Each master once among redis_nodes_at's. */
        int seen = 0;
        for (size_t i = 0; i < n; i++)
            seen += connected_to(redis_nodes_at(rn, i), redis_cluster_map_master_at(cl.map, m));
        cr_assert_eq(seen, 1, "master %zu among redis_nodes_at", m);
    }
    cr_assert_null(redis_nodes_at(rn, n));
    cr_assert_eq(redis_nodes_any(rn), redis_nodes_at(rn, 0));
    enum { KEYS = 1500 };
    int per_master[3] = {0};
    for (int i = 0; i < KEYS; i++) {
        char key[64], value[32];
        snprintf(key, sizeof(key), i % 2 ? "nodes:%d" : "{item:%d}:nodes", i);
        snprintf(value, sizeof(value), "v%d", i);
        nodes_set(rn, key, value);
        size_t owner = owner_by_get(plain, n, key, value);
        per_master[owner]++;
        cr_assert(
            connected_to(redis_nodes_for_key(rn, key), redis_cluster_map_master_at(cl.map, owner)),
            "redis_nodes_for_key(%s) is not its owner's connection", key);
    }
    for (size_t m = 0; m < n; m++) {
        cr_assert_gt(per_master[m], KEYS / 6, "the keys spread over every master");
        redisFree(plain[m]);
    }
    nodes_close(rn, &cfg);
    cluster_close(&cl);
}

Test(cluster, a_redis_nodes_pipeline_across_the_masters_answers_in_the_order_of_its_commands)
{
    cluster cl;
    cluster_open(&cl);
    config cfg;
    redis_nodes *rn = nodes_open(&cfg);
    enum { N = 3000 };
    static char keys[N][32], values[N][32];
    static const char *argv[N * 3];
    static redisReply *replies[N];
    int per_master[3] = {0};
    for (int i = 0; i < N; i++) {
        snprintf(keys[i], sizeof(keys[i]), "pipe:%d", i);
        snprintf(values[i], sizeof(values[i]), "%d", i * 3);
        argv[i * 3] = "SET";
        argv[i * 3 + 1] = keys[i];
        argv[i * 3 + 2] = values[i];
        const redis_cluster_node *owner =
            redis_cluster_map_master_of_key(cl.map, keys[i], strlen(keys[i]));
        for (size_t m = 0; m < 3; m++)
            per_master[m] += owner == redis_cluster_map_master_at(cl.map, m);
    }
    for (size_t m = 0; m < 3; m++)
        cr_assert_gt(per_master[m], N / 6, "the commands spread over every master");
    cr_assert_eq(redis_nodes_pipeline(rn, N, 3, argv, replies), 0);
    for (int i = 0; i < N; i++) {
        cr_assert(replies[i] && replies[i]->type == REDIS_REPLY_STATUS, "SET %d", i);
        freeReplyObject(replies[i]);
    }
    /* INCRBY by each key's own value doubles it: each reply names its
     * command. One key holds text: its error reply is NULL, alone. */
    nodes_set(rn, keys[1234], "text");
    for (int i = 0; i < N; i++)
        argv[i * 3] = "INCRBY";
    cr_assert_eq(redis_nodes_pipeline(rn, N, 3, argv, replies), 0);
    for (int i = 0; i < N; i++) {
        if (i == 1234) {
            cr_assert_null(replies[i]);
            continue;
        }
        cr_assert(replies[i] && replies[i]->type == REDIS_REPLY_INTEGER, "INCRBY %d", i);
        cr_assert_eq(replies[i]->integer, i * 6, "reply %d is command %d's", i, i);
        freeReplyObject(replies[i]);
    }
    nodes_close(rn, &cfg);
    cluster_close(&cl);
}

/* Deletes each key it meets through the redis_nodes of the scan, on
 * whichever master serves it, and counts it. */
typedef struct scan_delete {
    redis_nodes *rn;
    int seen;
} scan_delete;

static int delete_each(void *ctx, const char *key, size_t len)
{
    scan_delete *d = ctx;
    char k[64];
    snprintf(k, sizeof(k), "%.*s", (int)len, key);
    const char *argv[] = {"DEL", k};
    redisReply *r = nodes_command(d->rn, k, 2, argv);
    cr_assert(r->type == REDIS_REPLY_INTEGER && r->integer == 1, "DEL %s", k);
    freeReplyObject(r);
    d->seen++;
    return 0;
}

Test(cluster, a_redis_nodes_scan_finds_the_keys_of_every_master)
{
    cluster cl;
    cluster_open(&cl);
    config cfg;
    redis_nodes *rn = nodes_open(&cfg);
    enum { N = 3000 };
    static char keys[N][32];
    static const char *argv[N * 3];
    static redisReply *replies[N];
    for (int i = 0; i < N; i++) {
        snprintf(keys[i], sizeof(keys[i]), "nodes-scan:%d", i);
        argv[i * 3] = "SET";
        argv[i * 3 + 1] = keys[i];
        argv[i * 3 + 2] = "x";
    }
    cr_assert_eq(redis_nodes_pipeline(rn, N, 3, argv, replies), 0);
    for (int i = 0; i < N; i++)
        freeReplyObject(replies[i]);
    /* Each master holds a share; the scan meets every key once, and its
     * callback's DEL goes through the same redis_nodes to any master. */
    for (size_t m = 0; m < 3; m++) {
        redisContext *c = connect_to(redis_cluster_map_master_at(cl.map, m));
        redisReply *r = command(c, "SCAN 0 MATCH nodes-scan:* COUNT 100000");
        cr_assert(r->type == REDIS_REPLY_ARRAY && r->element[1]->elements > N / 6, "master %zu", m);
        freeReplyObject(r);
        redisFree(c);
    }
    scan_delete d = {rn, 0};
    cr_assert_eq(redis_nodes_scan(rn, "nodes-scan:*", delete_each, &d), 0);
    cr_assert_eq(d.seen, N);
    d.seen = 0;
    cr_assert_eq(redis_nodes_scan(rn, "nodes-scan:*", delete_each, &d), 0);
    cr_assert_eq(d.seen, 0);
    nodes_close(rn, &cfg);
    cluster_close(&cl);
}

Test(cluster, item_reset_through_redis_nodes_runs_on_each_items_master_loaded_or_not)
{
    cluster cl;
    cluster_open(&cl);
    config cfg;
    redis_nodes *rn = nodes_open(&cfg);
    /* The digests from one master: the other two answer NOSCRIPT first. */
    scripts sc;
    cr_assert_eq(scripts_init(&sc), 0);
    redisContext *first = connect_to(redis_cluster_map_master_at(cl.map, 0));
    cr_assert_eq(scripts_load(&sc, first), 0);
    redisFree(first);
    enum { ITEMS = 60 };
    for (int64_t item = 880000; item < 880000 + ITEMS; item++) {
        char state[KEYS_MAX], buyers[KEYS_MAX], returned[KEYS_MAX], given_back[KEYS_MAX], stock[32];
        keys_item_state(state, sizeof(state), item);
        keys_item_buyers(buyers, sizeof(buyers), item);
        keys_item_returned(returned, sizeof(returned), item);
        keys_item_given_back(given_back, sizeof(given_back), item);
        snprintf(stock, sizeof(stock), "%" PRId64, item % 1000);
        const char *ka[] = {state, buyers, returned, given_back, stock, "1", "0", "0", "1"};
        redisReply *r = redis_nodes_script(rn, &sc.s[SCRIPT_ITEM_RESET], 4, 5, ka);
        cr_assert(r && r->type == REDIS_REPLY_INTEGER && r->integer == 1, "item_reset %" PRId64,
                  item);
        freeReplyObject(r);
        const char *hget[] = {"HGET", state, "stock"};
        r = nodes_command(rn, state, 3, hget);
        cr_assert(r->type == REDIS_REPLY_STRING && strcmp(r->str, stock) == 0, "stock of %s",
                  state);
        freeReplyObject(r);
    }
    /* EVAL loaded the script where it was missing: every master has it. */
    for (size_t m = 0; m < 3; m++) {
        redisContext *c = connect_to(redis_cluster_map_master_at(cl.map, m));
        redisReply *r = command(c, "SCRIPT EXISTS %s", sc.s[SCRIPT_ITEM_RESET].sha);
        cr_assert(r->type == REDIS_REPLY_ARRAY && r->element[0]->integer == 1, "master %zu", m);
        freeReplyObject(r);
        redisFree(c);
    }
    nodes_close(rn, &cfg);
    cluster_close(&cl);
}

Test(cluster, a_redis_nodes_connection_killed_fails_one_command_and_the_next_reconnects)
{
    cluster cl;
    cluster_open(&cl);
    config cfg;
    redis_nodes *rn = nodes_open(&cfg);
    const char *key = "{item:1}:nodes-kill";
    nodes_set(rn, key, "here");
    redisContext *c = redis_nodes_for_key(rn, key);
    redisReply *r = redis_nodes_reply(rn, c, redisCommand(c, "CLIENT ID"), "CLIENT ID");
    cr_assert(r && r->type == REDIS_REPLY_INTEGER);
    long long id = r->integer;
    freeReplyObject(r);
    redis_cluster_node owner = {"", c->tcp.port};
    snprintf(owner.host, sizeof(owner.host), "%s", c->tcp.host);
    redisContext *plain = connect_to(&owner);
    r = command(plain, "CLIENT KILL ID %lld", id);
    cr_assert(r->type == REDIS_REPLY_INTEGER && r->integer == 1);
    freeReplyObject(r);
    redisFree(plain);
    const char *argv[] = {"GET", key};
    cr_assert_null(redis_nodes_command(rn, key, 2, argv, NULL), "the killed connection's GET");
    nodes_expect(rn, key, "here");
    cr_assert(connected_to(redis_nodes_for_key(rn, key), &owner));
    nodes_close(rn, &cfg);
    cluster_close(&cl);
}

/* --- moving a slot, as the cluster's tools do --------------------------------- */

typedef struct slot_move {
    int slot;
    redis_cluster_node source, target;
    redisContext *src, *dst;
    char src_id[64], dst_id[64];
} slot_move;

/* The move of slot from its master in cl.map to another master begins:
 * the target imports, the source migrates. */
static void move_begin(slot_move *mv, const cluster *cl, int slot)
{
    mv->slot = slot;
    mv->source = *redis_cluster_map_master(cl->map, slot);
    mv->target = *redis_cluster_map_master_at(cl->map, 0);
    if (redis_cluster_node_equal(&mv->target, &mv->source))
        mv->target = *redis_cluster_map_master_at(cl->map, 1);
    mv->src = connect_to(&mv->source);
    mv->dst = connect_to(&mv->target);
    node_id(mv->src, mv->src_id, sizeof(mv->src_id));
    node_id(mv->dst, mv->dst_id, sizeof(mv->dst_id));
    expect_status(mv->dst, "IMPORTING",
                  command(mv->dst, "CLUSTER SETSLOT %d IMPORTING %s", slot, mv->src_id));
    expect_status(mv->src, "MIGRATING",
                  command(mv->src, "CLUSTER SETSLOT %d MIGRATING %s", slot, mv->dst_id));
}

static void move_key(redisContext *src, const redis_cluster_node *target, const char *key)
{
    expect_status(src, "MIGRATE",
                  command(src, "MIGRATE %s %d %s 0 5000", target->host, target->port, key));
}

/* The move ends: the slot is the target's, told to every master. */
static void move_end(slot_move *mv, const cluster *cl)
{
    expect_status(mv->dst, "NODE",
                  command(mv->dst, "CLUSTER SETSLOT %d NODE %s", mv->slot, mv->dst_id));
    expect_status(mv->src, "NODE",
                  command(mv->src, "CLUSTER SETSLOT %d NODE %s", mv->slot, mv->dst_id));
    for (size_t m = 0; m < redis_cluster_map_masters(cl->map); m++) {
        const redis_cluster_node *n = redis_cluster_map_master_at(cl->map, m);
        if (redis_cluster_node_equal(n, &mv->target) || redis_cluster_node_equal(n, &mv->source))
            continue;
        redisContext *third = connect_to(n);
        expect_status(third, "NODE",
                      command(third, "CLUSTER SETSLOT %d NODE %s", mv->slot, mv->dst_id));
        redisFree(third);
    }
    redisFree(mv->src);
    redisFree(mv->dst);
}

Test(cluster, redis_nodes_follows_the_moved_of_a_slot_that_changed_master)
{
    cluster cl;
    cluster_open(&cl);
    const char *key = "{nodes:moved}:a", *other = "{nodes:elsewhere}:b";
    int slot = redis_cluster_slot(key, strlen(key));
    cr_assert_neq(slot, redis_cluster_slot(other, strlen(other)));
    /* Three holders of the old map: one for commands, one for a pipeline,
     * one for a command in printf format (the laboratory's). */
    config cfg1, cfg2, cfg3;
    redis_nodes *rn = nodes_open(&cfg1), *piped = nodes_open(&cfg2), *printed = nodes_open(&cfg3);
    nodes_set(rn, key, "moved");
    nodes_set(rn, other, "stays");
    nodes_expect(piped, key, "moved");
    nodes_expect(printed, key, "moved");
    slot_move mv;
    move_begin(&mv, &cl, slot);
    cr_assert(connected_to(redis_nodes_for_key(rn, key), &mv.source));
    move_key(mv.src, &mv.target, key);
    move_end(&mv, &cl);

    /* The old map's GET meets a MOVED, follows it at once, and the map
     * read again afterwards sends the key straight to its new master. */
    nodes_expect(rn, key, "moved");
    cr_assert(connected_to(redis_nodes_for_key(rn, key), &mv.target));
    nodes_expect(rn, other, "stays");
    const char *argv[] = {"GET", other, "GET", key, "GET", other};
    redisReply *replies[3];
    cr_assert_eq(redis_nodes_pipeline(piped, 3, 2, argv, replies), 0);
    const char *want[] = {"stays", "moved", "stays"};
    for (int i = 0; i < 3; i++) {
        cr_assert(replies[i] && replies[i]->type == REDIS_REPLY_STRING, "reply %d", i);
        cr_assert_str_eq(replies[i]->str, want[i]);
        freeReplyObject(replies[i]);
    }
    cr_assert(connected_to(redis_nodes_for_key(piped, key), &mv.target));
    redisReply *r = redis_nodes_commandf(printed, key, "APPEND %s %s", key, "!");
    cr_assert(r && r->type == REDIS_REPLY_INTEGER && r->integer == 6, "APPEND after the move");
    freeReplyObject(r);
    nodes_expect(printed, key, "moved!");
    cr_assert(connected_to(redis_nodes_for_key(printed, key), &mv.target));
    nodes_close(rn, &cfg1);
    nodes_close(piped, &cfg2);
    nodes_close(printed, &cfg3);
    cluster_close(&cl);
}

/* Moves key after a pause, while the test's MGET is being told TRYAGAIN. */
typedef struct late_move {
    redisContext *src;
    redis_cluster_node target;
    const char *key;
} late_move;

static void *move_later(void *arg)
{
    late_move *lm = arg;
    harness_sleep_ms(60);
    redisReply *r =
        redisCommand(lm->src, "MIGRATE %s %d %s 0 5000", lm->target.host, lm->target.port, lm->key);
    int ok = r && r->type == REDIS_REPLY_STATUS;
    freeReplyObject(r);
    return ok ? lm : NULL;
}

Test(cluster, redis_nodes_follows_ask_and_tryagain_while_a_slot_is_moving)
{
    cluster cl;
    cluster_open(&cl);
    const char *a = "{nodes:asked}:a", *b = "{nodes:asked}:b";
    config cfg;
    redis_nodes *rn = nodes_open(&cfg);
    nodes_set(rn, a, "went");
    nodes_set(rn, b, "stayed");
    slot_move mv;
    move_begin(&mv, &cl, redis_cluster_slot(a, strlen(a)));
    move_key(mv.src, &mv.target, a);

    /* The key that went is asked for at the target; the map keeps the
     * slot at the source, which still serves the key that stayed. */
    nodes_expect(rn, a, "went");
    cr_assert(connected_to(redis_nodes_for_key(rn, a), &mv.source), "an ASK changes no map");
    nodes_expect(rn, b, "stayed");
    const char *argv[] = {"GET", a, "GET", b};
    redisReply *replies[2];
    cr_assert_eq(redis_nodes_pipeline(rn, 2, 2, argv, replies), 0);
    cr_assert(replies[0] && replies[1]);
    cr_assert_str_eq(replies[0]->str, "went");
    cr_assert_str_eq(replies[1]->str, "stayed");
    freeReplyObject(replies[0]);
    freeReplyObject(replies[1]);

    /* A command over both keys is told TRYAGAIN while they are apart,
     * waits, and is asked at the target once the second key went too. */
    late_move lm = {connect_to(&mv.source), mv.target, b};
    pthread_t mover;
    cr_assert_eq(pthread_create(&mover, NULL, move_later, &lm), 0);
    int64_t start = clock_mono_ms();
    const char *mget[] = {"MGET", a, b};
    redisReply *r = nodes_command(rn, a, 3, mget);
    int64_t took = clock_mono_ms() - start;
    void *moved = NULL;
    pthread_join(mover, &moved);
    redisFree(lm.src);
    cr_assert_not_null(moved, "MIGRATE %s", b);
    cr_assert(r->type == REDIS_REPLY_ARRAY && r->elements == 2, "MGET");
    cr_assert_str_eq(r->element[0]->str, "went");
    cr_assert_str_eq(r->element[1]->str, "stayed");
    freeReplyObject(r);
    cr_assert_geq(took, 50, "at least one TRYAGAIN's pause (%lld ms)", (long long)took);

    move_end(&mv, &cl);
    nodes_expect(rn, b, "stayed");
    cr_assert(connected_to(redis_nodes_for_key(rn, a), &mv.target));
    nodes_close(rn, &cfg);
    cluster_close(&cl);
}
