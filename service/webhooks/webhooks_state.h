/* webhooks_state.h: the deliverer's state, shared by its loop (webhooks.c),
 * its windows' reads, sends and cursors (webhook_cursor.c), its wait
 * (webhook_poll.c) and its storm watch (webhook_storm.c). Inside
 * seckill-webhooks only. */
#ifndef SECKILL_WEBHOOKS_STATE_H
#define SECKILL_WEBHOOKS_STATE_H

#include <stdatomic.h>
#include <stdint.h>

#include <curl/curl.h>
#include <libpq-fe.h>

#include "config.h"
#include "outbox.h"
#include "storm_watch.h"
#include "webhook_endpoints.h"
#include "webhook_sign.h"
#include "webhook_store.h"
#include "webhook_window.h"

typedef struct webhooks webhooks;

#define COMPONENT "webhooks"
/* Deliveries in flight at most, and per endpoint. */
#define IN_FLIGHT_MAX (WEBHOOK_ENDPOINTS_MAX * IN_FLIGHT_PER_ENDPOINT)
#define IN_FLIGHT_PER_ENDPOINT 16
/* The longest nap between turns: retries fall due on PostgreSQL's clock,
 * and the feed and lag are looked at about this often without a NOTIFY. */
#define TICK_MS 200
#define SLOW_TICK_MS 1000
/* The longest a delivery answered 2xx waits to be written down with others
 * in one statement (a group commit: a row's DELETE, a cursor's UPDATE):
 * PostgreSQL is told once of many deliveries while the endpoints answer
 * many at once, and at once when nothing else is in flight. */
#define FLUSH_MS 10
/* While deliveries are in flight, a cursor that may move is written down
 * (webhook_window_write_due) once an event waits on it, looked for every
 * CURSOR_MS (an order's next event in the window: a pay soon after its
 * order), once half a window is answered, and at the latest after
 * CURSOR_LATE_MS: every UPDATE costs PostgreSQL about as much as reading a
 * page of events, and a crash sends again at most that long's answers. */
#define CURSOR_MS 50
#define CURSOR_LATE_MS 1000
/* How long a stop waits for the deliveries in flight to be answered before
 * it writes down what was (webhooks.c's write_down). */
#define STOP_DRAIN_MS 1000
/* How often the feed's head is read to tell a sale's storm (webhook_storm.c). */
#define STORM_LOOK_MS 200
/* How often a head that could not be read is tried again. */
#define STORM_RETRY_MS 60000
/* Events held per endpoint between its cursor and the last read. */
#define WINDOW_EVENTS 1024
/* The deliveries' statistics are refreshed when this many rows were
 * written since the last time, and then twice as many
 * (webhook_store_analyze). */
#define ANALYZE_FIRST 1000
/* The leader's session lock: "webhook" in ASCII. */
#define LEADER_KEY "33609237160847211"

typedef struct endpoint_state {
    webhook_endpoint conf;
    int64_t id; /* in webhook_endpoints; 0 until registered */
    int in_flight;
    webhook_window win;
    atomic_llong delivered, failed, dead, lag_ms;
} endpoint_state;

/* The request headers of a transfer: three fixed, then the signature, the
 * event id and its type. */
#define TRANSFER_HEADERS 6

/* A delivery on its way, or an idle one kept for the next: its easy handle
 * keeps the options that do not change, and its header list is its own
 * nodes over its own lines (no allocation a delivery). */
typedef struct transfer {
    size_t ep; /* index into endpoints */
    webhook_delivery d;
    int64_t seq; /* in its endpoint's window; -1: a row's retry */
    CURL *easy;
    struct curl_slist headers[TRANSFER_HEADERS];
    char lines[TRANSFER_HEADERS][WEBHOOK_SIGNATURE_MAX + 32];
    char *body;
    char error[CURL_ERROR_SIZE];
} transfer;

struct webhooks {
    const config *cfg;
    endpoint_state *endpoints;
    size_t nendpoints;
    PGconn *pg;
    int leader;
    atomic_int leading; /* the metrics' copy of leader */
    CURLM *multi;
    /* The one wait (webhook_poll.c): its epoll set, PostgreSQL's fd in it
     * (-1: none; taken out when the session changes), libcurl's next
     * timeout (-1: none). */
    int epfd, pg_fd;
    int64_t curl_due_ms;
    transfer *in_flight[IN_FLIGHT_MAX];
    int nin_flight;
    transfer *idle[IN_FLIGHT_MAX]; /* done, kept for the next deliveries */
    int nidle;
    /* Answered 2xx, not yet forgotten in PostgreSQL (they are owed until
     * then: a crash sends them again), since first_done_ms. */
    webhook_key done[IN_FLIGHT_MAX];
    int ndone;
    int64_t first_done_ms;
    /* Something changed what is due (a row forgotten, failed or written):
     * ask at once, else at next_due_ms (retries fall due). */
    int due_changed;
    int64_t rows, analyze_at; /* rows written; the next ANALYZE at */
    /* A cursor may move since first_movable_ms (0: none may); the events
     * waiting on it are looked for next at next_look_ms. */
    int64_t first_movable_ms, next_look_ms;
    /* The last page was full: read again without waiting for a NOTIFY. */
    int more;
    outbox_event page[OUTBOX_PAGE_MAX];
    uint32_t has_row[OUTBOX_PAGE_MAX];
    int64_t next_due_ms, next_read_ms, next_lag_ms, next_connect_ms;
    /* A sale's storm (webhook_storm.c): told from the feed's head
     * (storm_watch.h), looked at next at storm_next_ms; storm_failing: the
     * last read of the head failed (said in the log once); storm_waiting:
     * the metrics' copy of storm.waits. */
    storm_watch storm;
    int64_t storm_next_ms;
    int storm_failing;
    atomic_int storm_waiting;
};

/* Starts delivery d, due now: seq in its endpoint's window, or -1 for a
 * row. 0, or -1 when it could not (it stays owed). */
int webhooks_start(webhooks *w, const webhook_delivery *d, int64_t seq);

/* The session ended: the deliveries in flight stay owed and go again from
 * the next leader, whoever it is. */
void webhooks_drop_pg(webhooks *w);

/* The wait (webhook_poll.c). init: the epoll set made, libcurl told to
 * report its sockets and timer to it (0 or -1); close: it closed. stop_fd:
 * the stop signals' fd joins it; pg: PostgreSQL's socket fd does, in place
 * of the last one (-1: none). 0 or -1. */
int webhook_poll_init(webhooks *w);
void webhook_poll_close(webhooks *w);
int webhook_poll_stop_fd(webhooks *w, int stop_fd);
/* Takes fd (the stop's) out of the set again. */
void webhook_poll_unwatch(webhooks *w, int fd);
int webhook_poll_pg(webhooks *w, int fd);
/* What webhook_poll_wait saw ready, besides libcurl's sockets. */
#define WEBHOOK_POLL_STOP 1
#define WEBHOOK_POLL_PG 2
#define WEBHOOK_POLL_FAILED 4 /* the wait itself failed (logged) */
/* Waits up to nap_ms (less when libcurl's timer falls due sooner) for a
 * ready socket, tells libcurl of its ready sockets and of its timer when
 * due (transfers finished wait in curl_multi_info_read), and returns the
 * WEBHOOK_POLL_ bits of the others. */
int webhook_poll_wait(webhooks *w, int nap_ms);

/* The windows' part of a turn (webhook_cursor.c): a row made of the
 * window's event at seq of endpoint ep (webhook_store_park; 0, or -1 with
 * the session dropped); the feed read into the windows with min_room free;
 * whether a window is half empty; the events that may go posted (or parked
 * behind their order's row); the cursors written down. */
int webhook_cursor_park(webhooks *w, size_t ep, uint64_t seq, const webhook_delivery *d,
                        const char *error, int64_t delay_ms, int dead);
void webhook_cursor_read(webhooks *w, size_t min_room);
int webhook_cursor_wants_page(const webhooks *w);
void webhook_cursor_send(webhooks *w);
void webhook_cursor_move(webhooks *w, int64_t now);
/* The cursors that may move written down now, due or not (at a stop). */
void webhook_cursor_write(webhooks *w);
/* A cursor may move (an answer, a row parked): its clock starts. */
void webhook_cursor_movable(webhooks *w);

/* Whether deliveries wait out a sale's storm now (webhook_storm.c): every
 * STORM_LOOK_MS it reads the feed's head; while events come faster than
 * webhook_storm_rate a second (storm_watch.h), and for webhook_storm_wait_ms
 * at most, no delivery starts (nor is a page of the feed read for one). A
 * lost session is dropped (then 0). */
int webhook_storm_holds(webhooks *w, int64_t now);
/* Forgets the storm seen: the session ended (a next leader starts anew). */
void webhook_storm_reset(webhooks *w);

#endif
