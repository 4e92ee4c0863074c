/* webhook_sink.c: the webhook receiver of `make bench` (row 7,
 * loadtest/seckill_lab/bench_webhooks.py): it checks every delivery as a shop
 * must (docs/WEBHOOKS.md), counts them, and costs the machine little.
 *
 * The bench's receivers stand for the shop's machines, elsewhere in
 * production; here they share two cores with the purchases measured, so what
 * they spend is a flaw of the measurement. The sample receiver
 * (loadtest/webhook_receiver.py: Python, a thread a connection, a JSON line a
 * delivery) took 18-19 us of CPU a purchase during the storms. This one is one
 * libmicrohttpd thread on epoll (a few kept-alive connections from one
 * client), the product's own webhook_verify (common/webhook_sign.c: the one
 * signing code), and a bitmap of the event ids in place of a record.
 *
 * POST any path: a delivery. 200 when its Seckill-Signature signs the body
 * with the secret at a t within --tolerance seconds, and its Seckill-Event-Id
 * is the body's id (the body's first member, as seckill renders an event);
 * 400 otherwise (forged, stale, or not an event). At least once means a
 * repeat may come: it is answered 200 and counted as a repeat.
 * GET /stats[?after=ID]: {"deliveries": answered 200, "events": distinct ids,
 * "repeats": deliveries - events, "refused": answered 400, "max_event_id",
 * "events_after": distinct ids > ID (all of them without after)}.
 * GET /health: 200.
 *
 *   WEBHOOK_SECRET=... seckill-webhook-sink --port 9000
 * (the secret from the environment, as webhook_receiver.py takes it: a
 * command line is readable by every local user; --secret too). */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <microhttpd.h>

#include "webhook_sign.h"

/* A body larger than this is no event of seckill's: 413. */
#define SINK_BODY_MAX (1u << 20)
/* Event ids at most this (a 128 MiB bitmap); a larger one is refused 400. */
#define SINK_ID_MAX ((uint64_t)1 << 30)

/* The distinct event ids seen: a bit an id, grown to the largest. */
typedef struct id_set {
    uint64_t *words;
    size_t n_words;
    uint64_t count, max;
} id_set;

/* The sink's state. One libmicrohttpd thread calls every handler, so no
 * lock guards it. */
typedef struct sink {
    const char *secret;
    int64_t tolerance_s;
    id_set ids;
    uint64_t deliveries, refused;
    struct MHD_Response *received, *refused_answer, *not_event, *too_big, *ok, *missing,
        *bad_method;
} sink;

/* A request's body as it arrives. */
typedef struct upload {
    char *body;
    size_t len, cap;
    int too_big;
} upload;

/* Adds id: 1 when new, 0 a repeat, -1 at or beyond SINK_ID_MAX or out of
 * memory. */
static int id_set_add(id_set *s, uint64_t id)
{
    if (id >= SINK_ID_MAX)
        return -1;
    size_t w = (size_t)(id / 64);
    if (w >= s->n_words) {
        size_t n = s->n_words ? s->n_words : 1024;
        while (n <= w)
            n *= 2;
        uint64_t *grown = realloc(s->words, n * sizeof(*grown));
        if (!grown)
            return -1;
        memset(grown + s->n_words, 0, (n - s->n_words) * sizeof(*grown));
        s->words = grown;
        s->n_words = n;
    }
    uint64_t bit = (uint64_t)1 << (id % 64);
    if (s->words[w] & bit)
        return 0;
    s->words[w] |= bit;
    s->count++;
    if (id > s->max)
        s->max = id;
    return 1;
}

/* The number of ids in s greater than after. */
static uint64_t id_set_count_after(const id_set *s, uint64_t after)
{
    uint64_t first = after + 1, n = 0;
    for (size_t w = (size_t)(first / 64); w < s->n_words; w++) {
        uint64_t word = s->words[w];
        if (w == first / 64)
            word &= ~(uint64_t)0 << (first % 64);
        n += (uint64_t)__builtin_popcountll(word);
    }
    return n;
}

/* A decimal id of digits only (no sign, no space), ended at end; -1 when not. */
static int64_t parse_id(const char *s, char **end)
{
    if (*s < '0' || *s > '9')
        return -1;
    errno = 0;
    long long v = strtoll(s, end, 10);
    return errno ? -1 : v;
}

/* The event id a genuine delivery carries, or -1 when its Seckill-Event-Id
 * is missing or not the id that opens the body ({"id":N,...}). */
static int64_t delivery_id(struct MHD_Connection *c, const upload *u)
{
    const char *header = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Seckill-Event-Id");
    static const char opening[] = "{\"id\":";
    if (!header || u->len < sizeof(opening) || memcmp(u->body, opening, sizeof(opening) - 1))
        return -1;
    char *end;
    int64_t id = parse_id(header, &end);
    if (id < 0 || *end != '\0')
        return -1;
    /* The body is NUL-terminated by on_request, so strtoll stops inside it. */
    int64_t in_body = parse_id(u->body + sizeof(opening) - 1, &end);
    return in_body == id && (*end == ',' || *end == '}') ? id : -1;
}

static enum MHD_Result on_delivery(sink *s, struct MHD_Connection *c, upload *u)
{
    if (u->too_big)
        return MHD_queue_response(c, MHD_HTTP_CONTENT_TOO_LARGE, s->too_big);
    const char *signature =
        MHD_lookup_connection_value(c, MHD_HEADER_KIND, WEBHOOK_SIGNATURE_HEADER);
    if (!webhook_verify(s->secret, signature, u->body ? u->body : "", u->len, (int64_t)time(NULL),
                        s->tolerance_s)) {
        s->refused++;
        return MHD_queue_response(c, MHD_HTTP_BAD_REQUEST, s->refused_answer);
    }
    int64_t id = delivery_id(c, u);
    if (id < 0 || id_set_add(&s->ids, (uint64_t)id) < 0) {
        s->refused++;
        return MHD_queue_response(c, MHD_HTTP_BAD_REQUEST, s->not_event);
    }
    s->deliveries++;
    return MHD_queue_response(c, MHD_HTTP_OK, s->received);
}

static enum MHD_Result answer_copy(struct MHD_Connection *c, unsigned status, const char *text)
{
    struct MHD_Response *r =
        MHD_create_response_from_buffer(strlen(text), (void *)text, MHD_RESPMEM_MUST_COPY);
    if (!r)
        return MHD_NO;
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
    enum MHD_Result queued = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    return queued;
}

static enum MHD_Result on_stats(sink *s, struct MHD_Connection *c)
{
    const char *after_s = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "after");
    int64_t after = -1;
    if (after_s) {
        char *end;
        after = parse_id(after_s, &end);
        if (after < 0 || *end != '\0')
            return answer_copy(c, MHD_HTTP_BAD_REQUEST,
                               "{\"error\":\"invalid_after\",\"message\":\"after is an event id: "
                               "digits\"}\n");
    }
    char text[320];
    snprintf(text, sizeof(text),
             "{\"deliveries\":%" PRIu64 ",\"events\":%" PRIu64 ",\"repeats\":%" PRIu64
             ",\"refused\":%" PRIu64 ",\"max_event_id\":%" PRIu64 ",\"events_after\":%" PRIu64
             "}\n",
             s->deliveries, s->ids.count, s->deliveries - s->ids.count, s->refused, s->ids.max,
             after < 0 ? s->ids.count : id_set_count_after(&s->ids, (uint64_t)after));
    return answer_copy(c, MHD_HTTP_OK, text);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *data,
                                  size_t *data_size, void **con_cls)
{
    (void)version;
    sink *s = cls;
    if (strcmp(method, MHD_HTTP_METHOD_GET) == 0) {
        if (strcmp(url, "/stats") == 0)
            return on_stats(s, c);
        return MHD_queue_response(c, strcmp(url, "/health") == 0 ? MHD_HTTP_OK : MHD_HTTP_NOT_FOUND,
                                  strcmp(url, "/health") == 0 ? s->ok : s->missing);
    }
    if (strcmp(method, MHD_HTTP_METHOD_POST) != 0)
        return MHD_queue_response(c, MHD_HTTP_METHOD_NOT_ALLOWED, s->bad_method);
    upload *u = *con_cls;
    if (!u) {
        u = calloc(1, sizeof(*u));
        *con_cls = u;
        return u ? MHD_YES : MHD_NO;
    }
    if (*data_size == 0)
        return on_delivery(s, c, u);
    size_t n = *data_size;
    *data_size = 0;
    if (u->too_big || u->len + n >= SINK_BODY_MAX) {
        u->too_big = 1;
        return MHD_YES;
    }
    if (u->len + n + 1 > u->cap) {
        size_t cap = u->cap ? u->cap : 1024;
        while (cap < u->len + n + 1)
            cap *= 2;
        char *grown = realloc(u->body, cap);
        if (!grown)
            return MHD_NO;
        u->body = grown;
        u->cap = cap;
    }
    memcpy(u->body + u->len, data, n);
    u->len += n;
    u->body[u->len] = '\0';
    return MHD_YES;
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                         enum MHD_RequestTerminationCode why)
{
    (void)cls, (void)c, (void)why;
    upload *u = *con_cls;
    if (u)
        free(u->body);
    free(u);
    *con_cls = NULL;
}

/* A fixed JSON answer, made once and queued to every request that gets it. */
static struct MHD_Response *fixed(const char *text)
{
    struct MHD_Response *r =
        MHD_create_response_from_buffer(strlen(text), (void *)text, MHD_RESPMEM_PERSISTENT);
    if (r)
        MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
    return r;
}

static void sink_close(sink *s)
{
    struct MHD_Response *all[] = {s->received, s->refused_answer, s->not_event, s->too_big,
                                  s->ok,       s->missing,        s->bad_method};
    for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
        if (all[i])
            MHD_destroy_response(all[i]);
    free(s->ids.words);
}

static int sink_init(sink *s)
{
    s->received = fixed("{\"status\":\"received\"}\n");
    s->refused_answer =
        fixed("{\"error\":\"bad_signature\",\"message\":\"Seckill-Signature is forged, stale "
              "or missing\"}\n");
    s->not_event = fixed("{\"error\":\"not_an_event\",\"message\":\"Seckill-Event-Id is not the "
                         "id that opens the body\"}\n");
    s->too_big = fixed("{\"error\":\"too_large\",\"message\":\"a body is at most 1 MiB\"}\n");
    s->ok = fixed("{\"status\":\"ok\"}\n");
    s->missing = fixed("{\"error\":\"not_found\",\"message\":\"no such path\"}\n");
    s->bad_method = fixed("{\"error\":\"method_not_allowed\",\"message\":\"POST a delivery, GET "
                          "/stats or /health\"}\n");
    return s->received && s->refused_answer && s->not_event && s->too_big && s->ok && s->missing &&
                   s->bad_method
               ? 0
               : -1;
}

static void usage(FILE *to)
{
    fprintf(to, "usage: seckill-webhook-sink --port PORT [--host 127.0.0.1] [--tolerance 300]\n"
                "  [--secret SECRET]   (default: $WEBHOOK_SECRET; the environment is private to\n"
                "                       the process, a command line is not)\n"
                "Receives seckill's webhooks for `make bench`: verifies each Seckill-Signature,\n"
                "answers 200 or 400, counts deliveries and distinct event ids; GET /stats.\n");
}

/* A whole decimal number in [min, max] from s, or -1. */
static long number_in(const char *s, long min, long max)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    return end == s || *end || errno || v < min || v > max ? -1 : v;
}

/* The command line into addr, *secret and *tolerance_s: 0, 1 when --help
 * asked for the usage, -1 (said on stderr) when bad. */
static int parse_args(int argc, char **argv, struct sockaddr_in *addr, const char **secret,
                      long *tolerance_s)
{
    static const struct option options[] = {
        {"host", required_argument, NULL, 'h'},      {"port", required_argument, NULL, 'p'},
        {"tolerance", required_argument, NULL, 't'}, {"secret", required_argument, NULL, 's'},
        {"help", no_argument, NULL, '?' + 256},      {NULL, 0, NULL, 0}};
    const char *host = "127.0.0.1";
    long port = -1;
    *secret = getenv("WEBHOOK_SECRET");
    *tolerance_s = 300;
    for (int o; (o = getopt_long(argc, argv, "", options, NULL)) != -1;) {
        if (o == '?' + 256)
            return 1;
        if (o == 'h')
            host = optarg;
        else if (o == 's')
            *secret = optarg;
        else if (o == 'p' && (port = number_in(optarg, 1, 65535)) < 0)
            return fprintf(stderr, "seckill-webhook-sink: --port %s: not a port (1-65535)\n",
                           optarg),
                   -1;
        else if (o == 't' && (*tolerance_s = number_in(optarg, 0, 86400)) < 0)
            return fprintf(stderr, "seckill-webhook-sink: --tolerance %s: not seconds (0-86400)\n",
                           optarg),
                   -1;
        else if (o == '?')
            return fprintf(stderr, "seckill-webhook-sink: --help says what it takes\n"), -1;
    }
    if (optind < argc)
        return fprintf(stderr, "seckill-webhook-sink: %s: no argument is taken\n", argv[optind]),
               -1;
    if (port < 0)
        return fprintf(stderr, "seckill-webhook-sink: --port is required\n"), -1;
    if (!*secret || !**secret)
        return fprintf(stderr, "seckill-webhook-sink: the endpoint's secret: WEBHOOK_SECRET or "
                               "--secret\n"),
               -1;
    memset(addr, 0, sizeof(*addr));
    addr->sin_family = AF_INET;
    addr->sin_port = htons((uint16_t)port);
    if (inet_pton(AF_INET, host, &addr->sin_addr) != 1)
        return fprintf(stderr, "seckill-webhook-sink: --host %s: not an IPv4 address\n", host), -1;
    return 0;
}

int main(int argc, char **argv)
{
    struct sockaddr_in addr;
    long tolerance_s;
    sink s = {0};
    int parsed = parse_args(argc, argv, &addr, &s.secret, &tolerance_s);
    if (parsed > 0)
        usage(stdout);
    if (parsed != 0)
        return parsed > 0 ? 0 : 2;
    s.tolerance_s = tolerance_s;
    /* SIGTERM and SIGINT blocked before the daemon's thread exists, so it
     * inherits the mask and sigwait below alone takes them. */
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGTERM);
    sigaddset(&stop, SIGINT);
    pthread_sigmask(SIG_BLOCK, &stop, NULL);
    struct MHD_Daemon *d = NULL;
    if (sink_init(&s) == 0)
        d = MHD_start_daemon(MHD_USE_EPOLL_INTERNAL_THREAD | MHD_USE_ERROR_LOG, 0, NULL, NULL,
                             on_request, &s, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&addr,
                             MHD_OPTION_NOTIFY_COMPLETED, on_completed, NULL,
                             MHD_OPTION_LISTEN_BACKLOG_SIZE, 128u, MHD_OPTION_CONNECTION_TIMEOUT,
                             60u, MHD_OPTION_END);
    if (!d) {
        fprintf(stderr, "seckill-webhook-sink: cannot listen on port %u: %s\n",
                ntohs(addr.sin_port), strerror(errno));
        sink_close(&s);
        return 1;
    }
    int sig;
    sigwait(&stop, &sig);
    MHD_stop_daemon(d);
    sink_close(&s);
    return 0;
}
