/* e2e_experiments_off.c: the oversell laboratory is off unless a server is
 * told lab = on (issue 25): a server started without the key, or with lab =
 * off, answers every experiments route 404 lab_off, sells nothing of a
 * product item through them, and runs none of the laboratory's threads.
 * Not a lab test: a build without the laboratory answers the same. */
#include <dirent.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <criterion/criterion.h>

#include "harness.h"
#include "sale.h"

#define TOKEN "e2e-experiments-off-token"
/* Far more threads than a server runs without the laboratory. */
#define LAB_THREADS 200
#define TEXT_(x) #x
#define TEXT(x) TEXT_(x)

static pid_t server_pid;

static void kill_leftover(void)
{
    harness_kill_leftover(&server_pid);
}

TestSuite(experiments_off, .init = harness_reset_backends, .fini = kill_leftover, .timeout = 60);

/* Threads of process pid (its /proc/<pid>/task entries). */
static int threads_of(pid_t pid)
{
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
    DIR *d = opendir(path);
    cr_assert_not_null(d, "%s", path);
    int n = 0;
    for (struct dirent *e; (e = readdir(d));)
        n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

/* Every route of the laboratory on a server started with `lab` (a "KEY"
 * alone takes it out of the environment `make test` gives). */
static void expect_off(char *lab)
{
    char *env[] = {"SECKILL_ADMIN_TOKEN=" TOKEN, lab, "SECKILL_LAB_THREADS=" TEXT(LAB_THREADS),
                   NULL};
    int port;
    server_pid = harness_start_server(&port, env, "e2e-experiments-off-server.log");
    int64_t item = sale_create_item(port, TOKEN, "phone", 3);
    char path[4][160], resp[1024];
    snprintf(path[0], sizeof(path[0]),
             "/api/v1/experiments/local_unsafe/purchase?item=%" PRId64 "&user_id=5", item);
    snprintf(path[1], sizeof(path[1]),
             "/api/v1/experiments/redis_lock/purchase?item=%" PRId64 "&delay_ms=3000", item);
    snprintf(path[2], sizeof(path[2]), "/api/v1/experiments/redis_lock/audit?item=%" PRId64, item);
    snprintf(path[3], sizeof(path[3]), "/api/v1/experiments");
    for (size_t i = 0; i < 4; i++) {
        const char *methods[] = {"GET", "POST"};
        for (size_t m = 0; m < (i < 2 ? 2u : 1u); m++) {
            int status = harness_http(port, methods[m], path[i], NULL, NULL, resp, sizeof(resp));
            cr_expect_eq(status, 404, "%s: %s %s -> %d %s", lab, methods[m], path[i], status, resp);
            cr_expect(strstr(resp, "\"error\":\"lab_off\""), "%s: %s -> %s", lab, path[i], resp);
        }
    }
    int status = harness_http(port, "GET", "/lab/results.json", NULL, NULL, resp, sizeof(resp));
    cr_expect_eq(status, 404, "%s: /lab/results.json -> %d %s", lab, status, resp);
    cr_expect(strstr(resp, "\"error\":\"lab_off\""), "%s: %s", lab, resp);
    /* The page itself is served: it reads the API and says the laboratory is off. */
    cr_expect_eq(harness_http(port, "GET", "/lab", NULL, NULL, resp, sizeof(resp)), 200);
    cr_expect_eq(sale_item_number(port, item, "remaining"), 3, "%s: nothing was sold", lab);
    cr_expect_lt(threads_of(server_pid), LAB_THREADS, "%s: the laboratory's threads run", lab);
    harness_stop_clean(&server_pid, "server");
}

Test(experiments_off, a_server_started_without_the_key_answers_404_lab_off_and_runs_no_lab_thread)
{
    expect_off("SECKILL_LAB");
}

Test(experiments_off, lab_off_said_explicitly_is_off_too)
{
    expect_off("SECKILL_LAB=off");
}
