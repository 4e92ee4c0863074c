/* e2e_harness.c: what the harness starts dies with the process that started
 * it: a server and a worker started by a process killed with SIGKILL (as
 * ctest kills a test at its timeout: no exit handler runs) are gone within
 * a second or two, and ports are chosen outside the ephemeral range. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "clock.h"
#include "harness.h"

TestSuite(harness, .init = harness_reset_backends, .timeout = 60);

/* Whether pid is a live process (a zombie no longer runs: an orphan's
 * reaper may be slow to collect it, or may be no reaper at all). */
static int alive(pid_t pid)
{
    char path[64], stat[512];
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    size_t n = fread(stat, 1, sizeof(stat) - 1, f);
    fclose(f);
    stat[n] = '\0';
    const char *state = strrchr(stat, ')'); /* "pid (comm) S ...": comm may hold spaces */
    return state && state[1] == ' ' && state[2] != 'Z' && state[2] != 'X';
}

/* Waits up to timeout_ms for pid to be gone; whether it is. */
static int gone_within(pid_t pid, int timeout_ms)
{
    int64_t deadline = clock_mono_ms() + timeout_ms;
    while (alive(pid) && clock_mono_ms() < deadline)
        harness_sleep_ms(20);
    return !alive(pid);
}

static int read_full(int fd, void *buf, size_t len)
{
    for (size_t got = 0; got < len;) {
        ssize_t r = read(fd, (char *)buf + got, len - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -1;
        got += (size_t)r;
    }
    return 0;
}

Test(harness, a_server_and_a_worker_die_with_the_process_that_started_them_when_it_is_killed)
{
    int fds[2];
    cr_assert_eq(pipe(fds), 0);
    pid_t starter = fork();
    cr_assert(starter >= 0);
    if (starter == 0) {
        /* The starter: a server and a worker through the harness, their
         * pids to the test, then it waits to be killed. */
        close(fds[0]);
        int port;
        pid_t pids[2];
        pids[0] = harness_start_server(&port, NULL, "e2e-harness-server.log");
        pids[1] = harness_start_worker(NULL, "e2e-harness-worker.log");
        if (write(fds[1], pids, sizeof(pids)) != (ssize_t)sizeof(pids))
            _exit(1);
        for (;;)
            pause();
    }
    close(fds[1]);
    pid_t pids[2] = {0, 0};
    int got = read_full(fds[0], pids, sizeof(pids));
    close(fds[0]);
    if (got != 0) {
        harness_stop(starter, SIGKILL);
        cr_assert_fail("the starter did not start a server and a worker (see "
                       "e2e-harness-server.log, e2e-harness-worker.log)");
    }
    cr_assert(alive(pids[0]) && alive(pids[1]), "server %d and worker %d are running", (int)pids[0],
              (int)pids[1]);

    int status = harness_stop(starter, SIGKILL);
    cr_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL, "the starter was killed");
    int server_gone = gone_within(pids[0], 2000), worker_gone = gone_within(pids[1], 2000);
    /* Never left behind by this test, whatever it finds. */
    if (!server_gone)
        kill(pids[0], SIGKILL);
    if (!worker_gone)
        kill(pids[1], SIGKILL);
    cr_expect(server_gone, "the server (pid %d) outlived its starter by 2 s", (int)pids[0]);
    cr_expect(worker_gone, "the worker (pid %d) outlived its starter by 2 s", (int)pids[1]);
}

Test(harness, ports_are_chosen_outside_the_ephemeral_range_and_are_free)
{
    int lo = 32768, hi = 60999;
    FILE *f = fopen("/proc/sys/net/ipv4/ip_local_port_range", "r");
    if (f) {
        cr_assert_eq(fscanf(f, "%d %d", &lo, &hi), 2);
        fclose(f);
    }
    for (int i = 0; i < 200; i++) {
        int port = harness_free_port();
        cr_assert(port >= 10000 && port <= 65535 && (port < lo || port > hi),
                  "port %d: not in 10000-65535 outside the ephemeral range %d-%d", port, lo, hi);
    }
}

/* The pid in file, or 0 when there is none. */
static pid_t pid_in(const char *file)
{
    FILE *f = fopen(file, "r");
    int pid = 0;
    if (f && fscanf(f, "%d", &pid) != 1)
        pid = 0;
    if (f)
        fclose(f);
    return (pid_t)pid;
}

/* `services.sh <verb> <dir> [args]`, its output discarded; its exit code. */
static int services_sh(const char *verb, const char *dir, const char *args)
{
    char cmd[1024];
    snprintf(cmd, sizeof(cmd), "'%s/scripts/services.sh' %s '%s' %s >/dev/null 2>&1",
             SECKILL_SOURCE_DIR, verb, dir, args);
    int status = system(cmd);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* The cleanups of run.sh and test.sh call this one verb: it stops each
 * daemon services.sh started in a folder (here the Redlock's two and the
 * Redis with a password), by their pid files. */
Test(harness, services_sh_stop_all_stops_every_daemon_it_started_in_a_folder)
{
    char dir[512], file[600];
    snprintf(dir, sizeof(dir), "%s/stop-all", getenv("SECKILL_TEST_DIR"));
    cr_assert_eq(services_sh("redlock-start", dir, ""), 0);
    cr_assert_eq(services_sh("redis-auth-start", dir, "stop-all-test-password"), 0);
    static const char *pid_files[] = {"redlock-1/redis.pid", "redlock-2/redis.pid",
                                      "redis-auth/redis.pid"};
    pid_t pids[3];
    for (int i = 0; i < 3; i++) {
        snprintf(file, sizeof(file), "%s/%s", dir, pid_files[i]);
        pids[i] = pid_in(file);
        cr_assert(pids[i] > 0 && alive(pids[i]), "%s: no live pid", file);
    }
    cr_assert_eq(services_sh("stop-all", dir, ""), 0);
    for (int i = 0; i < 3; i++) {
        cr_expect(gone_within(pids[i], 1000), "%s (pid %d) still runs", pid_files[i], (int)pids[i]);
        snprintf(file, sizeof(file), "%s/%s", dir, pid_files[i]);
        cr_expect_neq(access(file, F_OK), 0, "%s is left", file);
    }
}
