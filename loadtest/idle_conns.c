/* idle_conns.c: opens N TCP connections to HOST:PORT, sends nothing, and
 * holds them until killed: the "10,000 idle buyers" of the memory
 * measurement of `make bench` (loadtest/seckill-lab bench).
 *
 * Usage: idle_conns HOST PORT N
 * Prints "open <k>" on stdout once k connections are established (k < N when
 * the server or the file-descriptor limit refused some; the reason goes to
 * stderr), then sleeps until SIGTERM or SIGINT. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: %s HOST PORT N\n", argv[0]);
        return 2;
    }
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(argv[2]))};
    if (inet_pton(AF_INET, argv[1], &addr.sin_addr) != 1) {
        fprintf(stderr, "idle_conns: '%s' is not an IPv4 address\n", argv[1]);
        return 2;
    }
    long n = atol(argv[3]);

    /* N sockets need N descriptors: take the hard limit. */
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }

    long open = 0;
    for (long i = 0; i < n; i++) {
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        if (fd < 0) {
            fprintf(stderr, "idle_conns: socket %ld: %s\n", i, strerror(errno));
            break;
        }
        /* A server that stopped accepting fills its backlog; then connect
         * would wait for minutes of SYN retries. */
        struct timeval tv = {2, 0};
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
        if (connect(fd, (struct sockaddr *)&addr, sizeof(addr)) < 0) {
            fprintf(stderr, "idle_conns: connect %ld: %s\n", i, strerror(errno));
            close(fd);
            break;
        }
        open++;
    }
    printf("open %ld\n", open);
    fflush(stdout);

    /* The descriptors close with the process. */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigprocmask(SIG_BLOCK, &set, NULL);
    int sig;
    sigwait(&set, &sig);
    return 0;
}
