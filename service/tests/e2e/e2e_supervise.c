/* e2e_supervise.c: the supervision of `make run` (scripts/supervise.sh)
 * over a real seckill-server and seckill-worker: every death is noticed and
 * the process started again after its back-off, whichever process is
 * waiting out its own back-off meanwhile. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "harness.h"

/* What run.sh does around supervise, for a server and a worker: start
 * NAME records the pid (and NAME.pid, which the test reads), and SIGTERM
 * stops both. $1: the folder of the logs and pid files. The supervisor dies
 * with the test (harness_launch) and each process it starts dies with it
 * (setpriv --pdeathsig), so a test killed midway leaves nothing running. */
static const char supervised[] =
    "set -u\n"
    "source \"$SECKILL_SOURCE_DIR/scripts/supervise.sh\"\n"
    "dir=$1\n"
    "declare -A pid_of since\n"
    "start() {\n"
    "    if [[ $1 == server ]]; then bin=$SERVER_BIN; else bin=$WORKER_BIN; fi\n"
    "    setpriv --pdeathsig KILL \"$bin\" >>\"$dir/$1.log\" 2>&1 &\n"
    "    pid_of[$1]=$! since[$1]=$SECONDS\n"
    "    echo $! >\"$dir/$1.pid\"\n"
    "}\n"
    "trap 'kill \"${pid_of[@]}\" 2>/dev/null; wait; exit 0' TERM\n"
    "start server\n"
    "start worker\n"
    "supervise \"$dir\" server worker\n";

static pid_t supervisor;
static char dir[512];

static void kill_leftovers(void)
{
    if (supervisor > 0) {
        kill(supervisor, SIGTERM);
        waitpid(supervisor, NULL, 0);
        supervisor = 0;
    }
}

TestSuite(supervise, .fini = kill_leftovers, .timeout = 120);

/* The pid in dir/name.pid, 0 when there is none yet. */
static pid_t pid_of(const char *name)
{
    char path[600];
    snprintf(path, sizeof(path), "%s/%s.pid", dir, name);
    FILE *f = fopen(path, "r");
    long pid = 0;
    if (f) {
        if (fscanf(f, "%ld", &pid) != 1)
            pid = 0;
        fclose(f);
    }
    return (pid_t)pid;
}

/* True when the log of name says that pid exited. */
static int logged_exit(const char *name, pid_t pid)
{
    char path[600], line[256], want[96];
    snprintf(path, sizeof(path), "%s/%s.log", dir, name);
    snprintf(want, sizeof(want), "run.sh: %s (pid %ld) exited", name, (long)pid);
    FILE *f = fopen(path, "r");
    int found = 0;
    while (f && !found && fgets(line, sizeof(line), f))
        found = strstr(line, want) != NULL;
    if (f)
        fclose(f);
    return found;
}

static void pause_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Waits up to timeout_ms for name's pid file to name a live process other
 * than old; returns it, or 0. */
static pid_t wait_restarted(const char *name, pid_t old, long timeout_ms)
{
    for (long waited = 0; waited < timeout_ms; waited += 50) {
        pid_t pid = pid_of(name);
        if (pid > 0 && pid != old && kill(pid, 0) == 0)
            return pid;
        pause_ms(50);
    }
    return 0;
}

Test(supervise, a_server_killed_during_the_workers_back_off_is_started_again_and_so_is_the_worker)
{
    snprintf(dir, sizeof(dir), "%s", harness_path("supervise"));
    mkdir(dir, 0755);
    for (const char *const *n = (const char *const[]){"server.pid", "worker.pid", NULL}; *n; n++) {
        char path[600];
        snprintf(path, sizeof(path), "%s/%s", dir, *n);
        unlink(path);
    }
    int port = harness_free_port();
    char port_env[32];
    snprintf(port_env, sizeof(port_env), "SECKILL_PORT=%d", port);
    char *argv[] = {"bash", "-c", (char *)supervised, "supervise-test", dir, NULL};
    char *env[] = {"SECKILL_SOURCE_DIR=" SECKILL_SOURCE_DIR,
                   "SERVER_BIN=" SECKILL_SERVER_BIN,
                   "WORKER_BIN=" SECKILL_WORKER_BIN,
                   "SECKILL_WORKER_ID=supervised",
                   port_env,
                   "SECKILL_TEST_VALGRIND",
                   NULL};
    supervisor = harness_launch("/bin/bash", argv, env, -1);
    cr_assert(supervisor > 0, "fork: %s", strerror(errno));
    cr_assert_eq(harness_wait_http(port, "/health", 30000), 0, "the server never answered");
    pid_t server = pid_of("server"), worker = wait_restarted("worker", 0, 10000);
    cr_assert(server > 0 && worker > 0);

    /* The worker dies twice: its second back-off is 2 s. */
    for (int death = 1; death <= 2; death++) {
        kill(worker, SIGKILL);
        for (int i = 0; i < 100 && !logged_exit("worker", worker); i++)
            pause_ms(50);
        cr_assert(logged_exit("worker", worker), "worker death %d not noticed", death);
        if (death == 1) {
            worker = wait_restarted("worker", worker, 10000);
            cr_assert(worker > 0, "the worker was not started again");
        }
    }
    /* The server dies while the worker waits out that back-off. */
    cr_assert_eq(pid_of("worker"), worker, "the back-off was over before the test could kill");
    kill(server, SIGKILL);
    pid_t new_worker = wait_restarted("worker", worker, 15000);
    pid_t new_server = wait_restarted("server", server, 15000);
    cr_expect(logged_exit("server", server), "the server's death was not logged");
    cr_assert(new_worker > 0, "the worker was not started again");
    cr_assert(new_server > 0, "the server was not started again (killed in the worker's back-off)");
    cr_assert_eq(harness_wait_http(port, "/health", 30000), 0, "the new server does not answer");

    kill(supervisor, SIGTERM);
    int status = 0;
    while (waitpid(supervisor, &status, 0) < 0 && errno == EINTR)
        ;
    supervisor = 0;
    cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 0, "supervise did not stop cleanly");
    cr_expect(kill(new_server, 0) != 0 && kill(new_worker, 0) != 0, "a child outlived supervise");
}
