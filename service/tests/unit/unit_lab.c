/* unit_lab.c: the laboratory's pure parts: the strategy table, the query
 * parameters of a lab purchase, the lab's keys and its routes, and the read
 * of a stock made on first use (over a stock in memory). */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <criterion/criterion.h>

#include "keys.h"
#include "lab_keys.h"
#include "lab_redlock.h"
#include "lab_routes.h"
#include "lab_status.h"
#include "lab_strategy.h"
#include "lab_table.h"
#include "lab_zookeeper.h"
#include "redis_cluster.h"
#include "router.h"

/* The strategies of issues 4 and 5 and EXPERIMENTS.md's verdicts. */
static const struct {
    const char *name;
    const char *family;
    int safe;
} expected[] = {
    {"local_unsafe", "local", 0},     {"local_atomic_check", "local", 0},
    {"local_mutex", "local", 1},      {"db_read_modify_write", "db", 0},
    {"db_single_update", "db", 1},    {"db_for_update", "db", 1},
    {"db_optimistic", "db", 1},       {"redis_read_check_decr", "redis", 0},
    {"redis_watch", "redis", 1},      {"redis_lock_setnx_expire", "lock", 1},
    {"redis_lock_getset", "lock", 1}, {"redis_lock", "lock", 1},
    {"redis_lock_fenced", "lock", 1}, {"redis_lock_reentrant", "lock", 1},
    {"redlock", "lock", 1},           {"pg_lock_table", "lock", 1},
    {"pg_advisory", "lock", 1},       {"zookeeper_lock", "lock", 1},
    {"segmented", "lock", 1},         {"lua_reserve", "redis", 1},
};

#define NEXPECTED (sizeof(expected) / sizeof(expected[0]))

Test(lab_table, every_strategy_of_the_issue_resolves_with_its_family_and_verdict)
{
    for (size_t i = 0; i < NEXPECTED; i++) {
        const lab_strategy *s = lab_table_find(expected[i].name, strlen(expected[i].name));
        cr_assert_not_null(s, "%s is missing", expected[i].name);
        cr_expect_str_eq(s->name, expected[i].name);
        cr_expect_str_eq(s->family, expected[i].family, "%s", s->name);
        cr_expect_eq(s->safe, expected[i].safe, "%s: verdict", s->name);
        cr_expect_not_null(s->run, "%s has no function", s->name);
        cr_expect_not_null(s->remaining, "%s has no audit", s->name);
    }
    cr_expect_eq(lab_table_count(), NEXPECTED, "the table holds %zu strategies", lab_table_count());
}

Test(lab_table, the_table_lists_each_strategy_once)
{
    for (size_t a = 0; a < lab_table_count(); a++) {
        cr_assert_not_null(lab_table_at(a));
        for (size_t b = 0; b < a; b++)
            cr_assert_str_neq(lab_table_at(a)->name, lab_table_at(b)->name);
    }
    cr_expect_null(lab_table_at(lab_table_count()));
}

Test(lab_table, an_unknown_or_partial_name_resolves_to_nothing)
{
    const char *unknown[] = {"", "local", "redis_lock_", "REDIS_LOCK", "zookeeper", "redlock_"};
    for (size_t i = 0; i < sizeof(unknown) / sizeof(unknown[0]); i++)
        cr_expect_null(lab_table_find(unknown[i], strlen(unknown[i])), "'%s'", unknown[i]);
    /* The length decides, not a terminating NUL: "redis_lock" out of a path. */
    const char *path = "redis_lock/purchase";
    const lab_strategy *s = lab_table_find(path, 10);
    cr_assert_not_null(s);
    cr_expect_str_eq(s->name, "redis_lock");
}

Test(lab_table, only_zookeeper_lock_counts_locks_outside_redis_and_postgresql)
{
    for (size_t i = 0; i < lab_table_count(); i++) {
        const lab_strategy *s = lab_table_at(i);
        if (strcmp(s->name, "zookeeper_lock") == 0)
            cr_expect_not_null(s->locks);
        else
            cr_expect_null(s->locks, "%s", s->name);
    }
}

Test(lab_zookeeper, a_lock_node_sorts_by_the_sequence_zookeeper_appended)
{
    cr_expect_eq(lab_zookeeper_sequence("lock-1234-0000000042"), 42);
    cr_expect_eq(lab_zookeeper_sequence("lock-99-0000000007"), 7);
    cr_expect_eq(lab_zookeeper_sequence("lock-1-2147483647"), 2147483647LL);
    /* The token before the sequence does not count, however large. */
    cr_expect_lt(lab_zookeeper_sequence("lock-9999999-0000000001"),
                 lab_zookeeper_sequence("lock-1-0000000002"));
    const char *bad[] = {"", "lock", "lock-", "lock-12-", "lock-12-00x1", "lock-1-999999999999999"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        cr_expect_eq(lab_zookeeper_sequence(bad[i]), -1, "'%s'", bad[i]);
}

Test(lab_zookeeper, an_items_lock_nodes_live_under_its_own_folder)
{
    char path[64];
    cr_expect_eq(lab_zookeeper_item_path(path, sizeof(path), 42), 20);
    cr_expect_str_eq(path, "/seckill/lab/item-42");
}

Test(lab_params, a_purchase_needs_an_item_and_takes_user_and_delay)
{
    lab_request r;
    const char *why = NULL;
    cr_assert_eq(lab_request_parse("42", "7", "150", 0, &r, &why), SK_OK);
    cr_expect_eq(r.item, 42);
    cr_expect_eq(r.user, 7);
    cr_expect_eq(r.delay_ms, 150);
    cr_assert_eq(lab_request_parse("1", NULL, NULL, 25, &r, &why), SK_OK);
    cr_expect_eq(r.user, 0, "no user_id: anonymous");
    cr_expect_eq(r.delay_ms, 25, "no delay_ms: the configured default");
    cr_assert_eq(lab_request_parse("1", NULL, "0", 25, &r, &why), SK_OK);
    cr_expect_eq(r.delay_ms, 0);
    cr_assert_eq(lab_request_parse("1", NULL, "10000", 0, &r, &why), SK_OK);
    cr_expect_eq(r.delay_ms, LAB_DELAY_MAX_MS);
}

Test(lab_params, bad_values_are_refused_with_a_reason)
{
    static const struct {
        const char *item, *user, *delay;
    } bad[] = {
        {NULL, NULL, NULL}, {"", NULL, NULL},    {"0", NULL, NULL},
        {"-3", NULL, NULL}, {"abc", NULL, NULL}, {"1x", NULL, NULL},
        {" 1", NULL, NULL}, {"1", "0", NULL},    {"1", "-1", NULL},
        {"1", "u", NULL},   {"1", NULL, "-1"},   {"1", NULL, "10001"},
        {"1", NULL, "1.5"}, {"1", NULL, ""},     {"1", NULL, "99999999999999999999"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        lab_request r;
        const char *why = NULL;
        cr_expect_eq(lab_request_parse(bad[i].item, bad[i].user, bad[i].delay, 0, &r, &why),
                     SK_INVALID, "case %zu", i);
        cr_expect_not_null(why, "case %zu has no reason", i);
    }
}

Test(lab_params, a_crash_is_injected_only_when_lab_faults_is_on)
{
    lab_request r = {0};
    const char *why = NULL;
    cr_assert_eq(lab_request_fault(NULL, NULL, 0, &r, &why), SK_OK,
                 "no ?crash=: nothing to refuse");
    cr_expect_eq(r.fault, LAB_FAULT_NONE);
    cr_expect_eq(lab_request_fault("after_setnx", NULL, 0, &r, &why), SK_INVALID,
                 "a server without lab_faults cannot be crashed by a query");
    cr_expect_not_null(why);
    cr_expect_eq(r.fault, LAB_FAULT_NONE);
    cr_assert_eq(lab_request_fault("after_setnx", NULL, 1, &r, &why), SK_OK);
    cr_expect_eq(r.fault, LAB_FAULT_CRASH_AFTER_SETNX);
    why = NULL;
    cr_expect_eq(lab_request_fault("before_expire", NULL, 1, &r, &why), SK_INVALID);
    cr_expect_not_null(why);
    cr_expect_eq(lab_request_fault("", NULL, 1, &r, &why), SK_INVALID);
}

Test(lab_params, racers_are_steered_only_when_lab_faults_is_on_and_one_fault_at_a_time)
{
    lab_request r = {0};
    const char *why = NULL;
    cr_expect_eq(lab_request_fault(NULL, "first", 0, &r, &why), SK_INVALID,
                 "a server without lab_faults cannot be steered by a query");
    cr_expect_not_null(why);
    cr_expect_eq(r.fault, LAB_FAULT_NONE);
    cr_assert_eq(lab_request_fault(NULL, "first", 1, &r, &why), SK_OK);
    cr_expect_eq(r.fault, LAB_FAULT_RACE_FIRST);
    cr_assert_eq(lab_request_fault(NULL, "second", 1, &r, &why), SK_OK);
    cr_expect_eq(r.fault, LAB_FAULT_RACE_SECOND);
    const char *bad[] = {"", "third", "First", "firstsecond"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        why = NULL;
        cr_expect_eq(lab_request_fault(NULL, bad[i], 1, &r, &why), SK_INVALID, "race=%s", bad[i]);
        cr_expect_not_null(why);
    }
    why = NULL;
    cr_expect_eq(lab_request_fault("after_setnx", "first", 1, &r, &why), SK_INVALID,
                 "a crash and a race at once");
    cr_expect_not_null(why);
}

/* The text between the first '{' and the next '}', as Redis Cluster hashes. */
static void expect_item_tag(const char *key, const char *tag)
{
    const char *open = strchr(key, '{');
    const char *close = open ? strchr(open, '}') : NULL;
    cr_assert(open && close, "%s has no hash tag", key);
    cr_expect_eq((size_t)(close - open - 1), strlen(tag), "%s", key);
    cr_expect_eq(memcmp(open + 1, tag, strlen(tag)), 0, "%s: tag is not %s", key, tag);
}

Test(lab_keys, every_lab_key_lives_under_the_items_hash_tag_and_lab_prefix)
{
    char key[KEYS_MAX];
    lab_keys_stock(key, sizeof(key), 42, "redis_watch");
    cr_expect_str_eq(key, "{item:42}:lab:stock:redis_watch");
    lab_keys_sold(key, sizeof(key), 42);
    cr_expect_str_eq(key, "{item:42}:lab:sold");
    lab_keys_lock(key, sizeof(key), 42, "redis_lock");
    cr_expect_str_eq(key, "{item:42}:lab:lock:redis_lock");
    lab_keys_segments(key, sizeof(key), 42);
    cr_expect_str_eq(key, "{item:42}:lab:seg");
    lab_keys_segment_lock(key, sizeof(key), 42, 7);
    cr_expect_str_eq(key, "{item:42}:lab:lock:segmented:7");
    lab_keys_lock_channel(key, sizeof(key), 42, "redis_lock_reentrant");
    cr_expect_str_eq(key, "{item:42}:lab:released:redis_lock_reentrant");
    lab_keys_fence_issued(key, sizeof(key), 42, "redis_lock_fenced");
    cr_expect_str_eq(key, "{item:42}:lab:fence:issued:redis_lock_fenced");
    lab_keys_fence_seen(key, sizeof(key), 42, "redis_lock_fenced");
    cr_expect_str_eq(key, "{item:42}:lab:fence:seen:redis_lock_fenced");
    lab_keys_race(key, sizeof(key), 42, "redis_lock_getset");
    cr_expect_str_eq(key, "{item:42}:lab:race:redis_lock_getset");

    int argc = 0;
    const char *names[64];
    cr_assert_leq(lab_table_count(), 64);
    for (size_t i = 0; i < lab_table_count(); i++)
        names[i] = lab_table_at(i)->name;
    char **argv = lab_keys_all(42, names, lab_table_count(), 8, &argc);
    cr_assert_not_null(argv);
    cr_expect_str_eq(argv[0], "UNLINK");
    cr_expect_eq(argc, 1 + 5 * (int)lab_table_count() + 8 + 2);
    for (int i = 1; i < argc; i++) {
        expect_item_tag(argv[i], "item:42");
        cr_expect_eq(strncmp(argv[i], "{item:42}:lab:", 14), 0, "%s", argv[i]);
        for (int j = 1; j < i; j++)
            cr_expect_str_neq(argv[i], argv[j]);
    }
    lab_keys_free_all(argv, argc);
    lab_keys_free_all(NULL, 0);
}

Test(lab_status, the_laboratorys_own_outcomes_are_mapped_by_it_and_the_products_as_before)
{
    const struct {
        sk_status st;
        int http;
        const char *code;
    } own[] = {{SK_BUSY, 429, "busy"},
               {SK_FENCED, 409, "fenced"},
               {SK_NOT_CONFIGURED, 503, "not_configured"},
               {SK_NOT_LAB_ITEM, 409, "not_lab_item"}};
    for (size_t i = 0; i < sizeof(own) / sizeof(own[0]); i++) {
        cr_expect_eq(lab_status_http(own[i].st), own[i].http, "%s", own[i].code);
        cr_expect_str_eq(lab_status_code(own[i].st), own[i].code);
        cr_expect_str_eq(sk_status_code(own[i].st), "internal_error", "the product knows none");
    }
    cr_expect_eq(lab_status_http(SK_SOLD_OUT), 409);
    cr_expect_str_eq(lab_status_code(SK_BACKEND_DOWN), "backend_unavailable");
    cr_expect_str_eq(lab_status_code(LAB_STATUS_END), "internal_error");
}

Test(lab_routes, the_lab_routes_take_a_strategy_name)
{
    route_match m;
    cr_assert_eq(router_match("GET", "/api/v1/experiments/redis_lock/purchase", &m), SK_OK);
    cr_expect_eq(m.route, ROUTE_LAB_PURCHASE);
    cr_expect_eq(m.name_len, strlen("redis_lock"));
    cr_expect_eq(memcmp(m.name, "redis_lock", m.name_len), 0);
    cr_assert_eq(router_match("POST", "/api/v1/experiments/local_unsafe/purchase", &m), SK_OK);
    cr_expect_eq(m.route, ROUTE_LAB_PURCHASE);
    cr_assert_eq(router_match("HEAD", "/api/v1/experiments/x1/purchase", &m), SK_OK);
    cr_assert_eq(router_match("GET", "/api/v1/experiments/segmented/audit", &m), SK_OK);
    cr_expect_eq(m.route, ROUTE_LAB_AUDIT);
    cr_assert_eq(router_match("GET", "/api/v1/experiments", &m), SK_OK);
    cr_expect_eq(m.route, ROUTE_LAB_LIST);
    cr_expect_null(m.name);
    cr_expect_str_eq(router_name(ROUTE_LAB_PURCHASE), "experiment_purchase");
}

Test(lab_routes, a_name_that_is_not_lower_case_words_is_404_and_a_wrong_method_405)
{
    route_match m;
    const char *bad[] = {"/api/v1/experiments//purchase", "/api/v1/experiments/Redis/purchase",
                         "/api/v1/experiments/a-b/purchase", "/api/v1/experiments/a/b/purchase",
                         "/api/v1/experiments/redis_lock/buy"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        cr_expect_eq(router_match("GET", bad[i], &m), SK_NOT_FOUND, "%s", bad[i]);
    char longname[128] = "/api/v1/experiments/";
    memset(longname + strlen(longname), 'a', ROUTER_NAME_MAX + 1);
    strcat(longname, "/purchase");
    cr_expect_eq(router_match("GET", longname, &m), SK_NOT_FOUND);
    cr_assert_eq(router_match("DELETE", "/api/v1/experiments/redis_lock/purchase", &m),
                 SK_METHOD_NOT_ALLOWED);
    cr_expect_str_eq(m.allow, "GET, HEAD, POST");
    cr_assert_eq(router_match("POST", "/api/v1/experiments/redis_lock/audit", &m),
                 SK_METHOD_NOT_ALLOWED);
    cr_expect_str_eq(m.allow, "GET, HEAD");
}

/* redlock_servers is read by the one parser of host:port lists, the one of
 * redis_cluster's seeds, at most LAB_REDLOCK_MAX of them. */
Test(lab_redlock, a_server_list_parses_into_hosts_and_ports)
{
    redis_cluster_node s[LAB_REDLOCK_MAX];
    char why[CONFIG_ERRLEN] = "";
    cr_assert_eq(redis_cluster_seeds_parse("127.0.0.1:6379, redis-b:6380 ,c:1", s, LAB_REDLOCK_MAX,
                                           why, sizeof(why)),
                 3, "%s", why);
    cr_expect_str_eq(s[0].host, "127.0.0.1");
    cr_expect_eq(s[0].port, 6379);
    cr_expect_str_eq(s[1].host, "redis-b");
    cr_expect_eq(s[1].port, 6380);
    cr_expect_str_eq(s[2].host, "c");
    cr_expect_eq(s[2].port, 1);
    cr_expect_eq(redis_cluster_seeds_parse("", s, LAB_REDLOCK_MAX, why, sizeof(why)), 0,
                 "empty: the main Redis");
    cr_expect_eq(redis_cluster_seeds_parse("  ", s, LAB_REDLOCK_MAX, why, sizeof(why)), 0);
}

Test(lab_redlock, the_config_takes_a_good_server_list_and_an_empty_one)
{
    const char *good[] = {"127.0.0.1:6379, redis-b:6380 ,c:1", "", "  ", "[::1]:7000",
                          "a:1,b:2,c:3,d:4,e:5,f:6,g:7"};
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        config cfg;
        char err[CONFIG_ERRLEN] = "";
        config_init(&cfg);
        cr_expect_eq(config_set(&cfg, "redlock_servers", good[i], err, sizeof(err)), 0, "'%s': %s",
                     good[i], err);
        cr_expect_str_eq(cfg.redlock_servers, good[i]);
        config_free(&cfg);
    }
}

Test(lab_redlock, a_bad_server_list_is_refused_when_the_config_loads_naming_the_key)
{
    const char *bad[] = {"host",       "host:",   ":6379",    "host:0",
                         "host:65536", "host:6x", "a:1,,b:2", "a:1,b:2,c:3,d:4,e:5,f:6,g:7,h:8"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        config cfg;
        char err[CONFIG_ERRLEN] = "";
        config_init(&cfg);
        cr_expect_eq(config_set(&cfg, "redlock_servers", bad[i], err, sizeof(err)), -1,
                     "%s was accepted", bad[i]);
        cr_expect(strncmp(err, "redlock_servers: ", 17) == 0 && strlen(err) > 17,
                  "%s: the error names no key or reason: '%s'", bad[i], err);
        cr_expect_str_eq(cfg.redlock_servers, "", "a refused value is not kept");
        config_free(&cfg);
    }
}

Test(lab_redlock, a_majority_wins_while_validity_is_left)
{
    cr_expect_eq(lab_redlock_quorum(1), 1);
    cr_expect_eq(lab_redlock_quorum(3), 2);
    cr_expect_eq(lab_redlock_quorum(4), 3);
    cr_expect_eq(lab_redlock_quorum(5), 3);
    cr_expect_eq(lab_redlock_validity_ms(10000, 5), 10000 - 5 - 102);
    cr_expect_leq(lab_redlock_validity_ms(200, 197), 0, "a lock won too late is no lock");
}

/* fence_take.lua and fence_read.lua touch the stock, the newest token and
 * the lock of one strategy's item: one Redis Cluster slot (unit_slots checks
 * the product's scripts the same way). */
Test(lab, the_fence_scripts_keys_are_in_one_slot)
{
    char keys[4][KEYS_MAX];
    lab_keys_stock(keys[0], KEYS_MAX, 3, "fenced");
    lab_keys_fence_seen(keys[1], KEYS_MAX, 3, "fenced");
    lab_keys_fence_issued(keys[2], KEYS_MAX, 3, "fenced");
    lab_keys_lock(keys[3], KEYS_MAX, 3, "fenced");
    int slot = redis_cluster_slot(keys[0], strlen(keys[0]));
    for (int i = 1; i < 4; i++)
        cr_expect_eq(redis_cluster_slot(keys[i], strlen(keys[i])), slot, "%s and %s", keys[i],
                     keys[0]);
}

/* A stock in memory for lab_counter_read: absent until made, its make's
 * answer chosen by the test, and every call counted. */
typedef struct memory_stock {
    int there;
    int64_t units;
    sk_status make_answer; /* SK_OK: make lays out `initial` */
    int64_t initial;
    int reads, makes;
} memory_stock;

static sk_status memory_read(lab_ctx *c, const lab_request *r, void *arg, int64_t *value)
{
    (void)c;
    (void)r;
    memory_stock *m = arg;
    m->reads++;
    if (!m->there)
        return SK_NOT_FOUND;
    *value = m->units;
    return SK_OK;
}

static sk_status memory_take(lab_ctx *c, const lab_request *r, void *arg, int64_t seen,
                             int64_t *remaining)
{
    (void)c;
    (void)r;
    memory_stock *m = arg;
    m->units = seen - 1;
    *remaining = m->units;
    return SK_OK;
}

static sk_status memory_make(lab_ctx *c, const lab_request *r, void *arg)
{
    (void)c;
    (void)r;
    memory_stock *m = arg;
    m->makes++;
    if (m->make_answer == SK_OK && !m->there) {
        m->there = 1;
        m->units = m->initial;
    }
    return m->make_answer;
}

static const lab_counter made_on_first_use = {memory_read, memory_take, memory_make};
static const lab_counter never_made = {memory_read, memory_take, NULL};
static const lab_request a_request = {.strategy = "test", .item = 1};

/* lab_counter_read of m through k answers st with value (left as it was,
 * -1, on a failure), after `reads` reads and `makes` makes. */
static void expect_read(memory_stock *m, const lab_counter *k, sk_status st, int64_t value,
                        int reads, int makes)
{
    int64_t v = -1;
    cr_expect_eq(lab_counter_read(NULL, &a_request, k, m, &v), st, "answer");
    cr_expect_eq(v, value, "value");
    cr_expect_eq(m->reads, reads, "reads");
    cr_expect_eq(m->makes, makes, "makes");
}

Test(lab_counter, a_stock_that_is_there_is_read_without_being_made)
{
    memory_stock m = {.there = 1, .units = 7};
    expect_read(&m, &made_on_first_use, SK_OK, 7, 1, 0);
}

Test(lab_counter, a_stock_not_made_yet_is_made_from_the_initial_stock_and_read_again)
{
    memory_stock m = {.make_answer = SK_OK, .initial = 5};
    expect_read(&m, &made_on_first_use, SK_OK, 5, 2, 1);
}

Test(lab_counter, a_make_that_fails_is_the_answer_and_nothing_is_read_after_it)
{
    memory_stock no_item = {.make_answer = SK_NOT_FOUND, .initial = 5};
    expect_read(&no_item, &made_on_first_use, SK_NOT_FOUND, -1, 1, 1);
    memory_stock down = {.make_answer = SK_BACKEND_DOWN, .initial = 5};
    expect_read(&down, &made_on_first_use, SK_BACKEND_DOWN, -1, 1, 1);
}

Test(lab_counter, a_counter_without_make_answers_what_its_read_said)
{
    memory_stock m = {.make_answer = SK_OK, .initial = 5};
    expect_read(&m, &never_made, SK_NOT_FOUND, -1, 1, 0);
}

Test(lab_counter, the_skeleton_sells_from_a_stock_made_on_its_first_use)
{
    memory_stock m = {.make_answer = SK_OK, .initial = 1};
    int64_t left = -1;
    cr_expect_eq(lab_check_work_take(NULL, &a_request, &made_on_first_use, &m, &left), SK_OK);
    cr_expect_eq(left, 0);
    cr_expect_eq(lab_check_work_take(NULL, &a_request, &made_on_first_use, &m, &left), SK_SOLD_OUT);
    cr_expect_eq(m.makes, 1, "made once");
}
