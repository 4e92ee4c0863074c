/* unit_redis_cluster.c: the pure part of redis_cluster.c: CRC16 and key
 * slots against the cluster specification's values, seeds of redis_cluster,
 * the slot map fed CLUSTER SLOTS replies through hiredis's own reader, and
 * the MOVED/ASK/TRYAGAIN decisions. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <criterion/criterion.h>
#include <hiredis/hiredis.h>

#include "redis_cluster.h"

static int slot_of(const char *key)
{
    return redis_cluster_slot(key, strlen(key));
}

/* --- CRC16 and slots --------------------------------------------------------- */

Test(slots, crc16_of_123456789_is_the_specifications_0x31c3)
{
    cr_assert_eq(redis_cluster_crc16("123456789", 9), 0x31C3);
    cr_assert_eq(redis_cluster_crc16("", 0), 0);
}

Test(slots, known_keys_land_in_the_slots_redis_gives_them)
{
    /* CLUSTER KEYSLOT of Redis 7.0 for each. */
    cr_assert_eq(slot_of("foo"), 12182);
    cr_assert_eq(slot_of("bar"), 5061);
    cr_assert_eq(slot_of("hello"), 866);
    cr_assert_eq(slot_of(""), 0);
}

Test(slots, keys_with_one_hash_tag_share_a_slot)
{
    cr_assert_eq(slot_of("{user1000}.following"), slot_of("{user1000}.followers"));
    cr_assert_eq(slot_of("{user1000}.following"), slot_of("user1000"));
    cr_assert_eq(slot_of("{item:42}:state"), slot_of("{item:42}:buyers"));
    cr_assert_eq(slot_of("{item:42}:state"), slot_of("item:42"));
}

Test(slots, only_the_first_brace_and_the_first_closing_brace_after_it_count)
{
    /* The specification's examples. */
    cr_assert_eq(slot_of("foo{{bar}}zap"), slot_of("{bar"));
    cr_assert_eq(slot_of("foo{bar}{zap}"), slot_of("bar"));
    cr_assert_eq(slot_of("a}b{c}d"), slot_of("c"));
}

Test(slots, an_empty_or_unclosed_tag_hashes_the_whole_key)
{
    const char *keys[] = {"foo{}{bar}", "{}", "{", "abc{", "}{", "x{}"};
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
        size_t len = strlen(keys[i]);
        cr_assert_eq(redis_cluster_slot(keys[i], len),
                     redis_cluster_crc16(keys[i], len) % REDIS_CLUSTER_SLOTS, "key %s", keys[i]);
    }
}

Test(slots, a_key_is_hashed_by_its_length_not_up_to_a_nul)
{
    const char key[] = {'{', 'a', '\0', 'b', '}', 'x'};
    cr_assert_eq(redis_cluster_slot(key, sizeof(key)), redis_cluster_slot("a\0b", 3));
    cr_assert_neq(redis_cluster_slot(key, sizeof(key)), slot_of("a"));
}

/* --- seeds ------------------------------------------------------------------- */

Test(seeds, a_list_of_host_port_entries_is_read_in_order)
{
    redis_cluster_node n[4];
    char err[256];
    int got = redis_cluster_seeds_parse(" 127.0.0.1:7000, redis-a.local:7001 ,[::1]:7002", n, 4,
                                        err, sizeof(err));
    cr_assert_eq(got, 3, "%s", err);
    cr_assert_str_eq(n[0].host, "127.0.0.1");
    cr_assert_eq(n[0].port, 7000);
    cr_assert_str_eq(n[1].host, "redis-a.local");
    cr_assert_eq(n[1].port, 7001);
    cr_assert_str_eq(n[2].host, "::1");
    cr_assert_eq(n[2].port, 7002);
}

Test(seeds, an_empty_value_means_a_single_redis)
{
    redis_cluster_node n[1];
    char err[256];
    cr_assert_eq(redis_cluster_seeds_parse("", n, 1, err, sizeof(err)), 0);
    cr_assert_eq(redis_cluster_seeds_parse("   ", n, 1, err, sizeof(err)), 0);
}

Test(seeds, bad_entries_are_refused_with_the_entry_and_the_reason)
{
    static const struct {
        const char *text, *says;
    } bad[] = {
        {"localhost", "entry 1 'localhost': expected host:port"},
        {"a:7000,b", "entry 2 'b': expected host:port"},
        {"a:", "the port must be a number in 1..65535"},
        {"a:0", "the port must be a number in 1..65535"},
        {"a:65536", "the port must be a number in 1..65535"},
        {"a:70x0", "the port must be a number in 1..65535"},
        {"a:-1", "the port must be a number in 1..65535"},
        {":7000", "the host is empty"},
        {"a b:7000", "the host holds ' '"},
        {"a:7000,,b:7001", "entry 2 is empty"},
        {"a:7000,", "entry 2 is empty"},
        {"[::1:7000", "expected [address]:port"},
        {"[::1]7000", "expected [address]:port"},
        {"a:1,a:2,a:3", "more than 2 entries"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        redis_cluster_node n[2];
        char err[256] = "";
        cr_assert_eq(redis_cluster_seeds_parse(bad[i].text, n, 2, err, sizeof(err)), -1, "'%s'",
                     bad[i].text);
        cr_assert(strstr(err, bad[i].says), "'%s' says '%s', not '%s'", bad[i].text, err,
                  bad[i].says);
    }
}

Test(seeds, a_host_longer_than_a_host_can_be_is_refused)
{
    char text[400];
    memset(text, 'h', 300);
    snprintf(text + 300, sizeof(text) - 300, ":7000");
    redis_cluster_node n[1];
    char err[256];
    cr_assert_eq(redis_cluster_seeds_parse(text, n, 1, err, sizeof(err)), -1);
    cr_assert(strstr(err, "longer than 255 bytes"), "%s", err);
}

/* --- the slot map ------------------------------------------------------------ */

/* A reply read from RESP text by hiredis's reader, as from a socket. */
static redisReply *reply_of(const char *resp)
{
    redisReader *reader = redisReaderCreate();
    cr_assert_not_null(reader);
    cr_assert_eq(redisReaderFeed(reader, resp, strlen(resp)), REDIS_OK);
    void *reply = NULL;
    cr_assert_eq(redisReaderGetReply(reader, &reply), REDIS_OK);
    cr_assert_not_null(reply, "incomplete RESP: %s", resp);
    redisReaderFree(reader);
    return reply;
}

/* RESP text built up piece by piece, for hiredis's reader. */
typedef struct resp_text {
    char text[4096];
    size_t len;
} resp_text;

static void put(resp_text *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(resp_text *r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(r->text + r->len, sizeof(r->text) - r->len, fmt, ap);
    va_end(ap);
    cr_assert(n >= 0 && (size_t)n < sizeof(r->text) - r->len);
    r->len += (size_t)n;
}

/* A node of CLUSTER SLOTS as Redis 7.0 writes it: endpoint, port, a 40-byte
 * id and an (empty) metadata array. */
static void put_node(resp_text *r, const char *host, int port)
{
    put(r, "*4\r\n$%zu\r\n%s\r\n:%d\r\n$40\r\n%040d\r\n*0\r\n", strlen(host), host, port, port);
}

/* One entry: slots from..to, a master and one replica (replica_port 0: none). */
static void put_range(resp_text *r, int from, int to, const char *host, int port, int replica_port)
{
    put(r, "*%d\r\n:%d\r\n:%d\r\n", replica_port ? 4 : 3, from, to);
    put_node(r, host, port);
    if (replica_port)
        put_node(r, host, replica_port);
}

/* Three masters on 7000-7002, each with one replica on 7003-7005, the slots
 * as redis-cli --cluster create splits them; the second's range comes in two
 * pieces. */
static const char *three_masters(resp_text *r)
{
    r->len = 0;
    put(r, "*4\r\n");
    put_range(r, 0, 5460, "127.0.0.1", 7000, 7003);
    put_range(r, 5461, 8000, "127.0.0.1", 7001, 7004);
    put_range(r, 8001, 10922, "127.0.0.1", 7001, 7004);
    put_range(r, 10923, 16383, "127.0.0.1", 7002, 7005);
    return r->text;
}

static redis_cluster_map *map_of(const char *resp, const char *answered_by)
{
    redisReply *r = reply_of(resp);
    char err[256] = "";
    redis_cluster_map *map = redis_cluster_map_from_slots(r, answered_by, err, sizeof(err));
    freeReplyObject(r);
    cr_assert_not_null(map, "%s", err);
    return map;
}

static void expect_node(const redis_cluster_node *n, const char *host, int port)
{
    cr_assert_not_null(n);
    cr_assert_str_eq(n->host, host);
    cr_assert_eq(n->port, port);
}

Test(map, cluster_slots_gives_every_slot_its_master_and_replicas)
{
    resp_text r;
    redis_cluster_map *map = map_of(three_masters(&r), "127.0.0.1");
    cr_assert_eq(redis_cluster_map_unowned(map), 0);
    cr_assert_eq(redis_cluster_map_masters(map), 3, "one master per node, not per range");
    cr_assert_eq(redis_cluster_map_stale(map), 0);
    expect_node(redis_cluster_map_master(map, 0), "127.0.0.1", 7000);
    expect_node(redis_cluster_map_master(map, 5460), "127.0.0.1", 7000);
    expect_node(redis_cluster_map_master(map, 5461), "127.0.0.1", 7001);
    expect_node(redis_cluster_map_master(map, 10922), "127.0.0.1", 7001);
    expect_node(redis_cluster_map_master(map, 16383), "127.0.0.1", 7002);
    cr_assert_null(redis_cluster_map_master(map, 16384));
    cr_assert_null(redis_cluster_map_master(map, -1));
    size_t n;
    const redis_cluster_node *replicas = redis_cluster_map_replicas(map, 9000, &n);
    cr_assert_eq(n, 1);
    expect_node(&replicas[0], "127.0.0.1", 7004);
    /* "foo" is slot 12182, the third master's. */
    expect_node(redis_cluster_map_master_of_key(map, "foo", 3), "127.0.0.1", 7002);
    redis_cluster_map_free(map);
}

Test(map, a_null_or_empty_endpoint_is_the_host_that_answered)
{
    redis_cluster_map *map = map_of("*2\r\n"
                                    "*3\r\n:0\r\n:8191\r\n*3\r\n$-1\r\n:7000\r\n$1\r\na\r\n"
                                    "*3\r\n:8192\r\n:16383\r\n*3\r\n$0\r\n\r\n:7001\r\n$1\r\nb\r\n",
                                    "10.0.0.5");
    expect_node(redis_cluster_map_master(map, 1), "10.0.0.5", 7000);
    expect_node(redis_cluster_map_master(map, 9000), "10.0.0.5", 7001);
    redis_cluster_map_free(map);
}

Test(map, an_unknown_endpoint_leaves_its_slots_without_owner)
{
    redis_cluster_map *map = map_of("*2\r\n"
                                    "*3\r\n:0\r\n:99\r\n*3\r\n$1\r\n?\r\n:7000\r\n$1\r\na\r\n"
                                    "*3\r\n:100\r\n:16383\r\n"
                                    "*3\r\n$5\r\nhostb\r\n:7001\r\n$1\r\nb\r\n",
                                    "10.0.0.5");
    cr_assert_eq(redis_cluster_map_unowned(map), 100);
    cr_assert_null(redis_cluster_map_master(map, 99));
    expect_node(redis_cluster_map_master(map, 100), "hostb", 7001);
    redis_cluster_map_free(map);
}

Test(map, slots_nobody_serves_have_no_master)
{
    redis_cluster_map *map = map_of("*1\r\n*3\r\n:10\r\n:20\r\n"
                                    "*3\r\n$1\r\nh\r\n:7000\r\n$1\r\na\r\n",
                                    "x");
    cr_assert_eq(redis_cluster_map_unowned(map), REDIS_CLUSTER_SLOTS - 11);
    cr_assert_null(redis_cluster_map_master(map, 9));
    expect_node(redis_cluster_map_master(map, 10), "h", 7000);
    size_t n = 99;
    cr_assert_null(redis_cluster_map_replicas(map, 21, &n));
    cr_assert_eq(n, 0);
    redis_cluster_map_free(map);
}

/* A well-formed node h:1, for the malformed replies around it. */
#define H1 "*3\r\n$1\r\nh\r\n:1\r\n$1\r\na\r\n"

Test(map, malformed_replies_are_refused_with_a_reason)
{
    static const struct {
        const char *resp, *says;
    } bad[] = {
        {"-ERR This instance has cluster support disabled\r\n", "cluster support disabled"},
        {"+OK\r\n", "not an array"},
        {"*1\r\n:1\r\n", "entry 0 is not [start, end, master, ...]"},
        {"*1\r\n*2\r\n:0\r\n:1\r\n", "entry 0 is not"},
        {"*1\r\n*3\r\n:5\r\n:4\r\n" H1, "entry 0 has slots 5-4"},
        {"*1\r\n*3\r\n:0\r\n:16384\r\n" H1, "slots 0-16384"},
        {"*1\r\n*3\r\n:0\r\n:1\r\n*2\r\n$1\r\nh\r\n:0\r\n", "malformed master"},
        {"*1\r\n*3\r\n:0\r\n:1\r\n*1\r\n$1\r\nh\r\n", "malformed master"},
        {"*1\r\n*4\r\n:0\r\n:1\r\n" H1 "*2\r\n:1\r\n:1\r\n", "malformed replica"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        redisReply *r = reply_of(bad[i].resp);
        char err[256] = "";
        cr_assert_null(redis_cluster_map_from_slots(r, "h", err, sizeof(err)), "case %zu", i);
        cr_assert(strstr(err, bad[i].says), "case %zu says '%s', not '%s'", i, err, bad[i].says);
        freeReplyObject(r);
    }
}

Test(map, free_of_null_is_a_no_op)
{
    redis_cluster_map_free(NULL);
}

/* --- redirects ---------------------------------------------------------------- */

static redis_cluster_redirect_kind parse(const char *s, redis_cluster_redirect *r)
{
    return redis_cluster_redirect_parse(s, strlen(s), r);
}

Test(redirects, moved_and_ask_give_their_slot_host_and_port)
{
    redis_cluster_redirect r;
    cr_assert_eq(parse("MOVED 3999 127.0.0.1:6381", &r), REDIS_CLUSTER_MOVED);
    cr_assert_eq(r.kind, REDIS_CLUSTER_MOVED);
    cr_assert_eq(r.slot, 3999);
    expect_node(&r.node, "127.0.0.1", 6381);
    cr_assert_eq(parse("ASK 3999 127.0.0.1:6381", &r), REDIS_CLUSTER_ASK);
    cr_assert_eq(r.slot, 3999);
    expect_node(&r.node, "127.0.0.1", 6381);
    cr_assert_eq(parse("MOVED 16383 redis-b.local:7001", &r), REDIS_CLUSTER_MOVED);
    expect_node(&r.node, "redis-b.local", 7001);
}

Test(redirects, an_ipv6_host_runs_to_the_last_colon_and_an_empty_one_is_kept_empty)
{
    redis_cluster_redirect r;
    cr_assert_eq(parse("MOVED 0 ::1:7000", &r), REDIS_CLUSTER_MOVED);
    expect_node(&r.node, "::1", 7000);
    cr_assert_eq(parse("ASK 12 :7000", &r), REDIS_CLUSTER_ASK);
    expect_node(&r.node, "", 7000);
}

Test(redirects, tryagain_is_its_own_kind)
{
    redis_cluster_redirect r;
    cr_assert_eq(parse("TRYAGAIN Multiple keys request during rehashing of slot", &r),
                 REDIS_CLUSTER_TRYAGAIN);
    cr_assert_eq(parse("TRYAGAIN", &r), REDIS_CLUSTER_TRYAGAIN);
}

Test(redirects, anything_else_is_not_a_redirect)
{
    const char *others[] = {
        "ERR unknown command",
        "MOVED",
        "MOVED ",
        "MOVED 3999",
        "MOVED 3999 ",
        "MOVED 3999 127.0.0.1",
        "MOVED 3999 127.0.0.1:",
        "MOVED 3999 127.0.0.1:0",
        "MOVED 3999 127.0.0.1:65536",
        "MOVED 16384 127.0.0.1:6381",
        "MOVED -1 127.0.0.1:6381",
        "MOVED x 127.0.0.1:6381",
        "MOVED 3999 127.0.0.1:6381 extra",
        "MOVED  3999 127.0.0.1:6381",
        "moved 3999 127.0.0.1:6381",
        "ASKING",
        "ASK 3999 127.0.0.1:63a1",
        "TRYAGAINX",
        "CLUSTERDOWN The cluster is down",
        "NOSCRIPT No matching script",
    };
    for (size_t i = 0; i < sizeof(others) / sizeof(others[0]); i++) {
        redis_cluster_redirect r;
        cr_assert_eq(parse(others[i], &r), REDIS_CLUSTER_NOT_REDIRECT, "'%s'", others[i]);
        cr_assert_eq(r.kind, REDIS_CLUSTER_NOT_REDIRECT);
    }
}

/* --- what a caller does -------------------------------------------------------- */

static redis_cluster_action follow(redis_cluster_map *map, redis_cluster_attempt *a,
                                   const char *err, const redis_cluster_node *current,
                                   redis_cluster_node *next)
{
    return redis_cluster_follow(map, a, err, strlen(err), current, next);
}

static const redis_cluster_node node_7000 = {"127.0.0.1", 7000};

Test(follow, moved_updates_the_slots_owner_flags_a_refresh_and_retries_there)
{
    resp_text r;
    redis_cluster_map *map = map_of(three_masters(&r), "127.0.0.1");
    redis_cluster_attempt a;
    redis_cluster_attempt_init(&a, 0);
    redis_cluster_node next;
    cr_assert_eq(follow(map, &a, "MOVED 100 127.0.0.1:7002", &node_7000, &next),
                 REDIS_CLUSTER_RETRY);
    expect_node(&next, "127.0.0.1", 7002);
    expect_node(redis_cluster_map_master(map, 100), "127.0.0.1", 7002);
    expect_node(redis_cluster_map_master(map, 101), "127.0.0.1", 7000);
    cr_assert_eq(redis_cluster_map_stale(map), 1);
    cr_assert_eq(redis_cluster_map_masters(map), 3);
    cr_assert_eq(a.redirects, 1);
    redis_cluster_map_free(map);
}

Test(follow, moved_to_a_node_the_map_did_not_know_adds_it_as_a_master)
{
    resp_text r;
    redis_cluster_map *map = map_of(three_masters(&r), "127.0.0.1");
    redis_cluster_attempt a;
    redis_cluster_attempt_init(&a, 0);
    redis_cluster_node next;
    /* A replica promoted by a failover. */
    cr_assert_eq(follow(map, &a, "MOVED 100 127.0.0.1:7003", &node_7000, &next),
                 REDIS_CLUSTER_RETRY);
    cr_assert_eq(redis_cluster_map_masters(map), 4);
    expect_node(redis_cluster_map_master(map, 100), "127.0.0.1", 7003);
    size_t n;
    redis_cluster_map_replicas(map, 100, &n);
    cr_assert_eq(n, 0);
    redis_cluster_map_free(map);
}

Test(follow, ask_retries_once_with_asking_and_leaves_the_map_alone)
{
    resp_text r;
    redis_cluster_map *map = map_of(three_masters(&r), "127.0.0.1");
    redis_cluster_attempt a;
    redis_cluster_attempt_init(&a, 0);
    redis_cluster_node next;
    cr_assert_eq(follow(map, &a, "ASK 100 127.0.0.1:7001", &node_7000, &next),
                 REDIS_CLUSTER_RETRY_ASKING);
    expect_node(&next, "127.0.0.1", 7001);
    expect_node(redis_cluster_map_master(map, 100), "127.0.0.1", 7000);
    cr_assert_eq(redis_cluster_map_stale(map), 0);
    redis_cluster_map_free(map);
}

Test(follow, a_redirect_without_host_means_the_host_of_the_node_that_answered)
{
    resp_text r;
    redis_cluster_map *map = map_of(three_masters(&r), "127.0.0.1");
    redis_cluster_attempt a;
    redis_cluster_attempt_init(&a, 0);
    redis_cluster_node next;
    cr_assert_eq(follow(map, &a, "MOVED 100 :7001", &node_7000, &next), REDIS_CLUSTER_RETRY);
    expect_node(&next, "127.0.0.1", 7001);
    expect_node(redis_cluster_map_master(map, 100), "127.0.0.1", 7001);
    cr_assert_eq(redis_cluster_map_masters(map), 3);
    redis_cluster_map_free(map);
}

Test(follow, tryagain_retries_the_same_node_later)
{
    resp_text r;
    redis_cluster_map *map = map_of(three_masters(&r), "127.0.0.1");
    redis_cluster_attempt a;
    redis_cluster_attempt_init(&a, 0);
    redis_cluster_node next;
    cr_assert_eq(follow(map, &a, "TRYAGAIN Multiple keys request during rehashing of slot",
                        &node_7000, &next),
                 REDIS_CLUSTER_RETRY_LATER);
    expect_node(&next, "127.0.0.1", 7000);
    redis_cluster_map_free(map);
}

Test(follow, other_errors_are_the_commands_answer)
{
    resp_text r;
    redis_cluster_map *map = map_of(three_masters(&r), "127.0.0.1");
    redis_cluster_attempt a;
    redis_cluster_attempt_init(&a, 0);
    redis_cluster_node next = {"untouched", 1};
    cr_assert_eq(follow(map, &a, "ERR Error running script", &node_7000, &next),
                 REDIS_CLUSTER_DELIVER);
    cr_assert_eq(a.redirects, 0);
    expect_node(&next, "untouched", 1);
    redis_cluster_map_free(map);
}

Test(follow, redirects_are_followed_up_to_the_bound_then_the_command_fails)
{
    resp_text r;
    redis_cluster_map *map = map_of(three_masters(&r), "127.0.0.1");
    redis_cluster_attempt a;
    redis_cluster_attempt_init(&a, 3);
    redis_cluster_node next;
    /* Two nodes sending a command back and forth (a map changing under it). */
    const char *ping_pong[] = {"MOVED 5 127.0.0.1:7001", "ASK 5 127.0.0.1:7000",
                               "MOVED 5 127.0.0.1:7001"};
    for (size_t i = 0; i < 3; i++)
        cr_assert_neq(follow(map, &a, ping_pong[i], &node_7000, &next), REDIS_CLUSTER_TOO_MANY);
    cr_assert_eq(follow(map, &a, "ASK 5 127.0.0.1:7000", &node_7000, &next),
                 REDIS_CLUSTER_TOO_MANY);
    redis_cluster_attempt_init(&a, 0);
    cr_assert_eq(a.max_redirects, REDIS_CLUSTER_MAX_REDIRECTS);
    redis_cluster_map_free(map);
}
