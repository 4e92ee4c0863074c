/* e2e_connection_limit.c: per_ip_connection_limit against a real server: past
 * the limit a client's next connection is refused while the connections it
 * already holds are served. (The default, 0, sets no limit, so that load
 * tests, which all come from 127.0.0.1, are not hindered.) */
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "clock.h"
#include "harness.h"

#define LIMIT 5

static int port;
static pid_t server_pid;

static void start_server(void)
{
    harness_reset_backends();
    char *env[] = {"SECKILL_PER_IP_CONNECTION_LIMIT=5", NULL};
    server_pid = harness_start_server(&port, env, "e2e-connection-limit.log");
}

static void kill_leftover(void)
{
    harness_kill_leftover(&server_pid);
}

TestSuite(connection_limit, .init = start_server, .fini = kill_leftover, .timeout = 60);

/* A TCP connection to the server (the kernel completes it before the server
 * decides whether to keep it). */
static int open_connection(void)
{
    int fd = harness_connect(port);
    cr_assert(fd >= 0, "connect to port %d", port);
    return fd;
}

/* Sends a keep-alive GET /health on fd and reads the answer. Returns its
 * status code, or 0 when the server closed (or reset) the connection
 * without answering within 3 s. */
static int health(int fd)
{
    static const char req[] = "GET /health HTTP/1.1\r\nHost: t\r\n\r\n";
    if (send(fd, req, sizeof(req) - 1, MSG_NOSIGNAL) != (ssize_t)(sizeof(req) - 1))
        return 0;
    char buf[1024];
    size_t got = 0;
    int64_t deadline = clock_mono_ms() + 3000;
    while (got < sizeof(buf) - 1) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int64_t left = deadline - clock_mono_ms();
        if (left <= 0 || poll(&p, 1, (int)left) != 1)
            break;
        ssize_t n = recv(fd, buf + got, sizeof(buf) - 1 - got, 0);
        if (n <= 0)
            break;
        got += (size_t)n;
        buf[got] = '\0';
        /* The body of /health is one small JSON object: it ends with '}'. */
        if (strstr(buf, "\r\n\r\n") && buf[got - 1] == '}')
            break;
    }
    buf[got] = '\0';
    int status = 0;
    return sscanf(buf, "HTTP/1.1 %d", &status) == 1 ? status : 0;
}

Test(connection_limit, the_sixth_connection_from_one_ip_is_refused_while_the_first_five_are_served)
{
    int fds[LIMIT];
    for (int i = 0; i < LIMIT; i++) {
        fds[i] = open_connection();
        cr_assert_eq(health(fds[i]), 200, "connection %d of %d was not served", i + 1, LIMIT);
    }

    int extra = open_connection();
    cr_expect_eq(health(extra), 0, "connection %d was served past the limit of %d", LIMIT + 1,
                 LIMIT);
    close(extra);

    for (int i = 0; i < LIMIT; i++)
        cr_expect_eq(health(fds[i]), 200, "connection %d is no longer served", i + 1);

    /* The limit counts open connections: once one closes, a new one gets in
     * (as soon as the server noticed the close). */
    close(fds[0]);
    int status = 0;
    for (int64_t deadline = clock_mono_ms() + 3000; status != 200;) {
        int fd = open_connection();
        status = health(fd);
        close(fd);
        if (clock_mono_ms() > deadline)
            break;
        if (status != 200)
            harness_sleep_ms(50);
    }
    cr_expect_eq(status, 200, "a connection was refused after another one closed");
    for (int i = 1; i < LIMIT; i++)
        close(fds[i]);
    harness_stop_clean(&server_pid, "server");
}
