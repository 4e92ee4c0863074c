/* integration_room_store.c: the waiting room's master key in the run's
 * PostgreSQL (room_store_master): the first server's draw is kept and read
 * by every later one, and a server whose insert waits for another's to
 * commit gets that other's key, not a failure. */
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "digest.h"
#include "harness.h"
#include "pool_session.h"
#include "room_order.h"
#include "room_store.h"

static config cfg;
static PGconn *pg;

static void exec_ok(PGconn *c, const char *sql)
{
    PGresult *res = PQexec(c, sql);
    cr_assert_eq(PQresultStatus(res), PGRES_COMMAND_OK, "%s: %s", sql, PQerrorMessage(c));
    PQclear(res);
}

static void setup(void)
{
    harness_config(&cfg);
    pg = harness_pg();
    exec_ok(pg, "DELETE FROM room_master"); /* as before the first server */
}

static void teardown(void)
{
    PQfinish(pg);
    config_free(&cfg);
}

TestSuite(room_store, .init = setup, .fini = teardown, .timeout = 60);

/* room_store_master on a session of its own: 0 or -1, the key in master. */
static int master_of_a_new_session(unsigned char *master)
{
    pool_session *s = pool_session_create(&cfg, NULL, NULL);
    cr_assert_not_null(s);
    int rc = room_store_master(s, master);
    pool_session_free(s);
    return rc;
}

Test(room_store, the_first_servers_master_key_is_kept_and_every_later_one_reads_it)
{
    unsigned char first[ROOM_SECRET_LEN], later[ROOM_SECRET_LEN];
    cr_assert_eq(master_of_a_new_session(first), 0);
    cr_assert_eq(master_of_a_new_session(later), 0);
    cr_assert_eq(memcmp(first, later, sizeof(first)), 0, "two servers, two master keys");
    cr_assert_eq(harness_pg_int(pg, "SELECT count(*) FROM room_master"), 1);
}

typedef struct racer {
    unsigned char master[ROOM_SECRET_LEN];
    int rc;
} racer;

static void *race(void *arg)
{
    racer *r = arg;
    r->rc = master_of_a_new_session(r->master);
    return NULL;
}

Test(room_store, a_server_that_waits_for_anothers_insert_gets_that_key)
{
    static const char other[] = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";
    exec_ok(pg, "BEGIN");
    exec_ok(pg, "INSERT INTO room_master (one, secret) VALUES (true, "
                "'00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff')");
    racer r = {.rc = -2};
    pthread_t t;
    cr_assert_eq(pthread_create(&t, NULL, race, &r), 0);
    /* Until the commit, its insert waits on the row the other one holds:
     * seen waiting on a lock (from a session of its own: a transaction
     * reads pg_stat_activity once) before the commit, or the test would
     * pass without a race. */
    PGconn *watch = harness_pg();
    int waiting = 0;
    for (int i = 0; i < 1000 && !waiting; i++) {
        waiting = harness_pg_int(watch, "SELECT count(*) FROM pg_stat_activity "
                                        "WHERE wait_event_type = 'Lock' "
                                        "AND query LIKE 'INSERT INTO room_master%'") == 1;
        if (!waiting)
            usleep(10 * 1000);
    }
    PQfinish(watch);
    cr_assert(waiting, "the other server's insert never waited on the row");
    exec_ok(pg, "COMMIT");
    pthread_join(t, NULL);
    cr_assert_eq(r.rc, 0, "the server that waited got no key");
    unsigned char want[ROOM_SECRET_LEN];
    cr_assert_eq(digest_unhex(other, want, sizeof(want)), 0);
    cr_assert_eq(memcmp(r.master, want, sizeof(want)), 0, "it drew a key of its own");
}
