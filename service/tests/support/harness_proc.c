/* harness_proc.c: the processes the tests start, and the ports they listen
 * on: one launch (harness_launch) that every start goes through, so that
 * whatever a test started dies with it; one start that waits for a process
 * to be up and stops it when it never is (harness_start); the stops that
 * tell a clean exit from a crash; ports chosen outside the kernel's
 * ephemeral range, as scripts/services.sh chooses them. */
#include "harness.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "clock.h"

/* Ports are chosen as scripts/services.sh's free_port chooses them: at
 * random in 10000-65535, outside the kernel's ephemeral range
 * (/proc/sys/net/ipv4/ip_local_port_range, 32768-60999 by default). A port
 * in that range can be taken at any moment as the local end of some client
 * connection (the tests open thousands), and a server would fail to bind
 * it; port 0 would hand out exactly such a port. */
#define PORT_LOW 10000
#define PORT_HIGH 65535

/* The kernel's ephemeral range, or its default when it cannot be read. */
static void ephemeral_range(int *lo, int *hi)
{
    *lo = 32768;
    *hi = 60999;
    FILE *f = fopen("/proc/sys/net/ipv4/ip_local_port_range", "r");
    int a, b;
    if (f && fscanf(f, "%d %d", &a, &b) == 2 && a > 0 && a <= b) {
        *lo = a;
        *hi = b;
    }
    if (f)
        fclose(f);
}

static struct sockaddr_in loopback(int port)
{
    return (struct sockaddr_in){.sin_family = AF_INET,
                                .sin_port = htons((uint16_t)port),
                                .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
}

/* Whether nothing is bound to port on 127.0.0.1 (no listener, and no
 * connection of ours in TIME_WAIT: no SO_REUSEADDR). */
static int port_free(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = loopback(port);
    int ok = fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0;
    if (fd >= 0)
        close(fd);
    return ok;
}

int harness_port_pick(void)
{
    /* Seeded once per process: the tests are forked from one runner, and
     * two of them must not draw the same sequence. */
    static pid_t seeded_for;
    static unsigned seed;
    if (seeded_for != getpid()) {
        seeded_for = getpid();
        seed = (unsigned)getpid() ^ (unsigned)clock_mono_ms() ^ (unsigned)time(NULL);
    }
    int lo, hi;
    ephemeral_range(&lo, &hi);
    int below = lo > PORT_LOW ? lo - PORT_LOW : 0;
    int above = hi < PORT_HIGH ? PORT_HIGH - (hi > PORT_LOW - 1 ? hi : PORT_LOW - 1) : 0;
    if (below + above <= 0)
        return -1;
    for (int i = 0; i < 100; i++) {
        int k = rand_r(&seed) % (below + above);
        int port = k < below ? PORT_LOW + k : PORT_HIGH - (k - below);
        if (port_free(port))
            return port;
    }
    return -1;
}

int harness_free_port(void)
{
    int port = harness_port_pick();
    cr_assert_gt(port, 0, "no free TCP port in %d-%d outside the ephemeral range", PORT_LOW,
                 PORT_HIGH);
    return port;
}

/* Which log each spawned process writes, so that a process that did not
 * stop cleanly can be shown with the end of its log. */
#define HARNESS_LOGS 16
static struct {
    pid_t pid;
    char path[512];
} spawned_logs[HARNESS_LOGS];

static void remember_log(pid_t pid, const char *path)
{
    static unsigned next;
    unsigned i = next++ % HARNESS_LOGS;
    spawned_logs[i].pid = pid;
    snprintf(spawned_logs[i].path, sizeof(spawned_logs[i].path), "%s", path);
}

/* Prints the last lines of pid's log to stderr (ctest shows them on a
 * failure). */
static void print_log_tail(pid_t pid)
{
    const char *path = NULL;
    for (unsigned i = 0; i < HARNESS_LOGS; i++)
        if (spawned_logs[i].pid == pid)
            path = spawned_logs[i].path;
    FILE *f = path ? fopen(path, "r") : NULL;
    if (!f)
        return;
    enum { KEEP = 20, WIDTH = 400 };
    static char lines[KEEP][WIDTH];
    unsigned n = 0;
    while (fgets(lines[n % KEEP], WIDTH, f))
        n++;
    fclose(f);
    fprintf(stderr, "---- last lines of %s ----\n", path);
    for (unsigned i = n > KEEP ? n - KEEP : 0; i < n; i++)
        fputs(lines[i % KEEP], stderr);
    fprintf(stderr, "----\n");
}

pid_t harness_launch(const char *bin, char *const argv[], char *const extra_env[], int out)
{
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid != 0)
        return pid;
    /* The child ends with the process that started it, even when that one
     * is killed (ctest's timeout, kill -9, a test that crashed) and runs no
     * exit handler. A parent already gone before the prctl took effect is
     * seen by getppid. */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent)
        _exit(127);
    if (out >= 0) {
        dup2(out, STDOUT_FILENO);
        dup2(out, STDERR_FILENO);
    }
    for (char *const *e = extra_env; e && *e; e++) {
        if (strchr(*e, '='))
            putenv(*e);
        else
            unsetenv(*e); /* a name alone: the child goes without it */
    }
    if (getenv("SECKILL_TEST_VALGRIND") && *getenv("SECKILL_TEST_VALGRIND") == '1') {
        /* Any error or definite leak ends the child with 99, which the
         * tests' clean-exit checks turn into a failure. */
        char *vargv[32] = {"valgrind",
                           "--quiet",
                           "--error-exitcode=99",
                           "--leak-check=full",
                           "--errors-for-leak-kinds=definite",
                           "--show-leak-kinds=definite",
                           "--trace-children=no",
                           (char *)bin};
        int n = 8;
        for (int i = 1; argv[i] && n < 31; i++)
            vargv[n++] = argv[i];
        vargv[n] = NULL;
        execvp("valgrind", vargv);
        _exit(127);
    }
    execv(bin, argv);
    _exit(127);
}

pid_t harness_launch_logged(const char *bin, char *const argv[], char *const extra_env[],
                            const char *log_path)
{
    int fd = open(log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0)
        return -1;
    pid_t pid = harness_launch(bin, argv, extra_env, fd);
    int launch_errno = errno;
    close(fd);
    errno = launch_errno;
    if (pid > 0)
        remember_log(pid, log_path);
    return pid;
}

pid_t harness_spawn(const char *bin, char *const argv[], char *const extra_env[],
                    const char *log_path)
{
    pid_t pid = harness_launch_logged(bin, argv, extra_env, log_path);
    cr_assert(pid > 0, "start %s (log %s): %s", bin, log_path, strerror(errno));
    return pid;
}

/* Stops pid, whose start the harness gives up on (it never became ready),
 * and shows the end of its log: nothing the harness started outlives a
 * failed start. */
static void give_up(pid_t pid)
{
    harness_stop(pid, SIGKILL);
    print_log_tail(pid);
}

int harness_connect(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = loopback(port);
    if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0)
        return fd;
    if (fd >= 0)
        close(fd);
    return -1;
}

/* Whether 127.0.0.1:port answers GET path with 200 now. */
static int http_ok(int port, const char *path)
{
    char req[256];
    int reqlen =
        snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", path);
    int fd = harness_connect(port), ok = 0;
    if (fd >= 0 && write(fd, req, (size_t)reqlen) == reqlen) {
        char buf[64] = {0};
        ssize_t n = read(fd, buf, sizeof(buf) - 1);
        ok = n > 12 && strncmp(buf + 9, "200", 3) == 0;
    }
    if (fd >= 0)
        close(fd);
    return ok;
}

int harness_wait_http(int port, const char *path, int timeout_ms)
{
    int64_t deadline = clock_mono_ms() + timeout_ms;
    while (clock_mono_ms() < deadline) {
        if (http_ok(port, path))
            return 0;
        usleep(50 * 1000);
    }
    return -1;
}

pid_t harness_start(const char *bin, char *const extra_env[], const char *log_name,
                    harness_ready_fn ready, void *ctx)
{
    const char *name = strrchr(bin, '/') ? strrchr(bin, '/') + 1 : bin;
    char *argv[] = {(char *)name, NULL};
    pid_t pid = harness_spawn(bin, argv, extra_env, harness_path(log_name));
    int64_t deadline = clock_mono_ms() + HARNESS_START_TIMEOUT_MS;
    char why[512] = "";
    int up = 0, status;
    while (!up) {
        up = ready(ctx, why, sizeof(why));
        if (up == 0 && waitpid(pid, &status, WNOHANG) == pid) {
            print_log_tail(pid);
            cr_assert_fail("%s exited (%s %d) before it was up: see %s", name,
                           WIFEXITED(status) ? "status" : "signal",
                           WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status),
                           harness_path(log_name));
        }
        if (up == 0 && clock_mono_ms() >= deadline)
            snprintf(why, sizeof(why), "not up within %d s", HARNESS_START_TIMEOUT_MS / 1000);
        if (up < 0 || (up == 0 && clock_mono_ms() >= deadline)) {
            give_up(pid);
            cr_assert_fail("%s %s, stopped: see %s", name, why, harness_path(log_name));
        }
        if (up == 0)
            usleep(HARNESS_START_POLL_MS * 1000);
    }
    return pid;
}

static int server_ready(void *ctx, char *why, size_t cap)
{
    (void)why;
    (void)cap;
    return http_ok(*(const int *)ctx, "/ready");
}

pid_t harness_start_server(int *port, char *const extra_env[], const char *log_name)
{
    enum { MAX_ENV = 32 };
    static char port_env[32];
    char *env[MAX_ENV + 2];
    size_t n = 0;
    *port = harness_free_port();
    snprintf(port_env, sizeof(port_env), "SECKILL_PORT=%d", *port);
    env[n++] = port_env;
    for (char *const *e = extra_env; e && *e && n < MAX_ENV; e++)
        env[n++] = *e;
    env[n] = NULL;
    return harness_start(SECKILL_SERVER_BIN, env, log_name, server_ready, port);
}

const char *harness_worker_id(char *const env[])
{
    const char *id = "1";
    for (char *const *e = env; e && *e; e++)
        if (strncmp(*e, "SECKILL_WORKER_ID=", 18) == 0)
            id = *e + 18;
    return id;
}

typedef struct worker_up {
    redisContext *redis;
    char name[128]; /* as CLIENT LIST shows it */
} worker_up;

/* Up means connected to Redis under its name, which the worker does after
 * it set up its signals: a stop from now on is a clean stop. */
static int worker_ready(void *ctx, char *why, size_t cap)
{
    (void)why;
    (void)cap;
    worker_up *w = ctx;
    redisReply *r = redisCommand(w->redis, "CLIENT LIST");
    int up = r && r->type == REDIS_REPLY_STRING && strstr(r->str, w->name);
    freeReplyObject(r);
    return up;
}

pid_t harness_start_worker(char *const extra_env[], const char *log_name)
{
    worker_up w = {.redis = harness_redis()};
    snprintf(w.name, sizeof(w.name), "name=seckill-worker:%s ", harness_worker_id(extra_env));
    pid_t pid = harness_start(SECKILL_WORKER_BIN, extra_env, log_name, worker_ready, &w);
    redisFree(w.redis);
    return pid;
}

int harness_admin(char *const args[], char *out, size_t cap)
{
    int fds[2];
    cr_assert_eq(pipe2(fds, O_CLOEXEC), 0);
    char *argv[16] = {"seckill-admin"};
    int n = 1;
    for (char *const *a = args; *a && n < 15; a++)
        argv[n++] = *a;
    argv[n] = NULL;
    char *env[] = {"SECKILL_TEST_VALGRIND", NULL}; /* not the subject of a valgrind run */
    pid_t pid = harness_launch(SECKILL_ADMIN_BIN, argv, env, fds[1]);
    close(fds[1]);
    cr_assert(pid > 0, "fork: %s", strerror(errno));
    size_t got = 0;
    ssize_t r;
    while (got + 1 < cap && (r = read(fds[0], out + got, cap - 1 - got)) > 0)
        got += (size_t)r;
    out[got] = '\0';
    close(fds[0]);
    int status;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

int harness_stop(pid_t pid, int sig)
{
    int status = 0;
    kill(pid, sig);
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    return status;
}

/* Whether every thread of pid is stopped: state T (or t) in each
 * /proc/<pid>/task/<tid>/stat, after the command's closing parenthesis. */
static int all_threads_stopped(pid_t pid)
{
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
    DIR *dir = opendir(path);
    if (!dir)
        return 0;
    int stopped = 1;
    struct dirent *e;
    while (stopped && (e = readdir(dir))) {
        if (e->d_name[0] == '.')
            continue;
        char stat_path[sizeof(path) + sizeof(e->d_name) + 8], line[512];
        snprintf(stat_path, sizeof(stat_path), "%s/%s/stat", path, e->d_name);
        FILE *f = fopen(stat_path, "r");
        if (!f)
            continue; /* a thread that just ended */
        size_t n = fread(line, 1, sizeof(line) - 1, f);
        fclose(f);
        line[n] = '\0';
        const char *end = strrchr(line, ')');
        stopped = end && end[1] == ' ' && (end[2] == 'T' || end[2] == 't');
    }
    closedir(dir);
    return stopped;
}

void harness_freeze(pid_t pid)
{
    cr_assert_eq(kill(pid, SIGSTOP), 0, "SIGSTOP %d: %s", (int)pid, strerror(errno));
    int64_t deadline = clock_mono_ms() + 10000;
    while (!all_threads_stopped(pid)) {
        cr_assert(clock_mono_ms() < deadline, "process %d did not stop within 10 s", (int)pid);
        usleep(1000);
    }
}

void harness_stop_clean(pid_t *pid, const char *what)
{
    cr_assert_gt(*pid, 0, "%s is not running", what);
    pid_t stopped = *pid;
    int status = harness_stop(*pid, SIGTERM);
    *pid = 0;
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        print_log_tail(stopped);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s did not stop cleanly (%s %d)",
              what, WIFEXITED(status) ? "exit" : "signal",
              WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
}

void harness_kill_leftover(pid_t *pid)
{
    if (*pid > 0)
        harness_stop(*pid, SIGKILL);
    *pid = 0;
}

void harness_system_start_with(harness_system *s, char *const extra_env[], const char *name,
                               harness_server_start server, harness_worker_start worker)
{
    char log[128];
    snprintf(log, sizeof(log), "%s-server.log", name);
    s->server = server(&s->port, extra_env, log);
    snprintf(log, sizeof(log), "%s-worker.log", name);
    s->worker = worker(extra_env, log);
}

void harness_system_start(harness_system *s, char *const extra_env[], const char *name)
{
    harness_reset_backends();
    harness_system_start_with(s, extra_env, name, harness_start_server, harness_start_worker);
}

void harness_system_stop(harness_system *s)
{
    harness_stop_clean(&s->server, "server");
    harness_stop_clean(&s->worker, "worker");
}

void harness_system_kill(harness_system *s)
{
    harness_kill_leftover(&s->server);
    harness_kill_leftover(&s->worker);
}

long harness_rss_kib(pid_t pid)
{
    char path[64], line[256];
    snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "r");
    long kib = -1;
    while (f && fgets(line, sizeof(line), f) && sscanf(line, "VmRSS: %ld", &kib) != 1)
        ;
    if (f)
        fclose(f);
    return kib;
}
