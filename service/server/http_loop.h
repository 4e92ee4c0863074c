/* http_loop.h: what the HTTP server's two halves share, inside the server
 * only (http_server.h is the API): the loops and the server they make up
 * (http_loop.c), and the callbacks through which each loop's daemon hands
 * requests to the exchange (http_exchange.c). */
#ifndef SECKILL_HTTP_LOOP_H
#define SECKILL_HTTP_LOOP_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/socket.h>

#include <microhttpd.h>

#include "http_server.h"
#include "ip_count.h"

struct event;

/* One loop thread and its daemon. */
typedef struct http_loop {
    http_server *server;
    struct MHD_Daemon *daemon;
    struct event_base *base;
    struct event *mhd_ev;    /* the daemon's epoll descriptor is readable */
    struct event *timer_ev;  /* the daemon's next connection timeout */
    struct event *wake_ev;   /* resumes, quiesce or stop were asked */
    struct event *resume_ev; /* active: this thread resumed connections */
    int wake_fd;
    atomic_int woken; /* a wake-up is on its way: later ones need not write */
    pthread_t thread;
    int thread_started;
    int index;
    void *local;    /* what the hooks' start made for this loop */
    int local_made; /* start ran: stop is owed */
    int quiesced;   /* loop thread; read by others only after it is joined */
    /* The address the accept policy counted for a connection that has not
     * started yet: given back if the daemon drops the connection first. */
    struct sockaddr_storage pending;
    socklen_t pending_len;
} http_loop;

struct http_server {
    http_loop *loops;
    int nloops;
    int listen_fd;
    ip_count *per_ip;       /* NULL: no per-IP limit */
    http_observer observer; /* told of every answer, may be NULL */
    void *observer_ctx;
    uint32_t id_prefix; /* request ids: prefix-sequence, unique across restarts */
    _Atomic uint64_t next_id;
    http_handler handler;
    void *ctx;
    http_loop_hooks hooks;
    size_t max_body;
    atomic_int quiesce;     /* asked: the loops stop accepting */
    atomic_int stop;        /* asked: the loops end */
    atomic_int quiesced;    /* loops that stopped accepting */
    atomic_int in_progress; /* requests read and not yet answered and sent */
    atomic_int connections; /* open client connections, idle ones included */
    _Atomic uint64_t begun; /* requests ever begun: a drain sees new ones come */
    atomic_int draining;    /* answers close their connection */
};

/* A connection of l was resumed (an answer came): the loop runs its daemon
 * soon, at the end of its turn when this is its own thread (no wake-up
 * written), else woken. Any thread. */
void http_loop_resumed(http_loop *l);

/* The daemon's request callback (cls: the loop): one exchange per request,
 * its body gathered, then the server's handler called. */
enum MHD_Result http_exchange_on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                         const char *method, const char *version,
                                         const char *upload_data, size_t *upload_data_size,
                                         void **con_cls);

/* The daemon's completion callback: the exchange of the request is freed. */
void http_exchange_on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                                enum MHD_RequestTerminationCode toe);

#endif
