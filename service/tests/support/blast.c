/* blast.c: the load client of the end-to-end tests: a response parser fed
 * with bytes, and one epoll loop driving keep-alive connections. */
#include "blast.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"

/* Headers longer than this are not a response of ours. */
#define BLAST_HEADER_MAX 65536
/* Consecutive failed connects after which a connection slot is given up. */
#define BLAST_CONNECT_TRIES 5
#define BLAST_READ_CHUNK 16384

/* ---- the parser ---- */

/* Finds "\r\n" in buf[from .. len). Returns its offset or -1. */
static long find_crlf(const char *buf, size_t from, size_t len)
{
    for (size_t i = from; i + 1 < len; i++)
        if (buf[i] == '\r' && buf[i + 1] == '\n')
            return (long)i;
    return -1;
}

/* Case-insensitive: does the header line start with "name:"? Sets *value to
 * the trimmed value, *vlen to its length. */
static int header_is(const char *line, size_t len, const char *name, const char **value,
                     size_t *vlen)
{
    size_t n = strlen(name);
    if (len <= n || line[n] != ':' || strncasecmp(line, name, n) != 0)
        return 0;
    const char *v = line + n + 1, *end = line + len;
    while (v < end && (*v == ' ' || *v == '\t'))
        v++;
    while (end > v && (end[-1] == ' ' || end[-1] == '\t'))
        end--;
    *value = v;
    *vlen = (size_t)(end - v);
    return 1;
}

/* Does value (vlen bytes) hold token, case-insensitively? */
static int has_token(const char *value, size_t vlen, const char *token)
{
    size_t n = strlen(token);
    for (size_t i = 0; i + n <= vlen; i++)
        if (strncasecmp(value + i, token, n) == 0)
            return 1;
    return 0;
}

/* Walks a chunked body from start. With join, moves the chunk data together
 * at start (call it only after a walk without join returned 1). Returns 1
 * with *end just past the trailers and *body_len, 0 when incomplete, -1 when
 * malformed. */
static int chunked_walk(char *buf, size_t len, size_t start, int join, size_t *end,
                        size_t *body_len)
{
    size_t pos = start, total = 0;
    for (;;) {
        long eol = find_crlf(buf, pos, len);
        if (eol < 0)
            return len - pos > 1024 ? -1 : 0;
        size_t size = 0, digits = 0;
        for (size_t i = pos; i < (size_t)eol && buf[i] != ';'; i++, digits++) {
            char ch = buf[i];
            int v = ch >= '0' && ch <= '9'   ? ch - '0'
                    : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10
                    : ch >= 'A' && ch <= 'F' ? ch - 'A' + 10
                                             : -1;
            if (v < 0 || size > ((size_t)1 << 30))
                return -1;
            size = size * 16 + (size_t)v;
        }
        if (digits == 0)
            return -1;
        pos = (size_t)eol + 2;
        if (size == 0)
            break;
        if (len - pos < size + 2)
            return 0;
        if (buf[pos + size] != '\r' || buf[pos + size + 1] != '\n')
            return -1;
        if (join)
            memmove(buf + start + total, buf + pos, size);
        total += size;
        pos += size + 2;
    }
    /* Trailers, then the empty line. */
    for (;;) {
        long eol = find_crlf(buf, pos, len);
        if (eol < 0)
            return len - pos > BLAST_HEADER_MAX ? -1 : 0;
        int empty = (size_t)eol == pos;
        pos = (size_t)eol + 2;
        if (empty)
            break;
    }
    *end = pos;
    *body_len = total;
    return 1;
}

int blast_parse(char *buf, size_t len, int head_request, int at_eof, blast_response *r)
{
    memset(r, 0, sizeof(*r));
    /* Status line: HTTP/1.x SP 3DIGIT (SP reason)? CRLF */
    if (len < 12)
        return memcmp(buf, "HTTP/1.", len < 7 ? len : 7) == 0 ? 0 : -1;
    if (memcmp(buf, "HTTP/1.", 7) != 0 || (buf[7] != '0' && buf[7] != '1') || buf[8] != ' ')
        return -1;
    int status = 0;
    for (int i = 9; i < 12; i++) {
        if (buf[i] < '0' || buf[i] > '9')
            return -1;
        status = status * 10 + (buf[i] - '0');
    }
    if (status < 100 || status > 599)
        return -1;
    long eol = find_crlf(buf, 12, len);
    if (eol < 0)
        return len > BLAST_HEADER_MAX ? -1 : 0;
    if (eol > 12 && buf[12] != ' ')
        return -1;

    long content_length = -1;
    int chunked = 0, close = buf[7] == '0';
    size_t pos = (size_t)eol + 2;
    for (;;) {
        long end = find_crlf(buf, pos, len);
        if (end < 0)
            return len > BLAST_HEADER_MAX ? -1 : 0;
        const char *line = buf + pos, *v;
        size_t llen = (size_t)end - pos, vlen;
        pos = (size_t)end + 2;
        if (llen == 0)
            break;
        if (header_is(line, llen, "content-length", &v, &vlen)) {
            if (vlen == 0 || vlen > 15)
                return -1;
            long n = 0;
            for (size_t i = 0; i < vlen; i++) {
                if (v[i] < '0' || v[i] > '9')
                    return -1;
                n = n * 10 + (v[i] - '0');
            }
            if (content_length >= 0 && content_length != n)
                return -1;
            content_length = n;
        } else if (header_is(line, llen, "transfer-encoding", &v, &vlen)) {
            chunked = has_token(v, vlen, "chunked");
        } else if (header_is(line, llen, "connection", &v, &vlen)) {
            if (has_token(v, vlen, "close"))
                close = 1;
            else if (has_token(v, vlen, "keep-alive"))
                close = 0;
        }
    }

    r->status = status;
    r->body = buf + pos;
    r->close = close;
    if (status < 200) {
        r->interim = 1;
        r->close = 0;
        r->consumed = pos;
        return 1;
    }
    if (head_request || status == 204 || status == 304) {
        r->consumed = pos;
        return 1;
    }
    if (chunked) {
        size_t end, body_len;
        int rc = chunked_walk(buf, len, pos, 0, &end, &body_len);
        if (rc <= 0)
            return rc;
        chunked_walk(buf, len, pos, 1, &end, &body_len);
        r->body_len = body_len;
        r->consumed = end;
        return 1;
    }
    if (content_length >= 0) {
        if (len - pos < (size_t)content_length)
            return 0;
        r->body_len = (size_t)content_length;
        r->consumed = pos + (size_t)content_length;
        return 1;
    }
    /* No length: the body runs to the end of the connection. */
    if (!at_eof)
        return 0;
    r->body_len = len - pos;
    r->consumed = len;
    r->close = 1;
    return 1;
}

/* ---- the connections ---- */

typedef enum { SLOT_IDLE, SLOT_CONNECTING, SLOT_OPEN, SLOT_DEAD } slot_state;

typedef struct flight {
    size_t index;
    int head; /* a HEAD request: its response has no body */
} flight;

typedef struct slot {
    int fd;
    slot_state state;
    int failures;     /* consecutive connects without a response */
    int answered;     /* responses on the current connection */
    int closing;      /* the server ends the connection after the last response */
    int64_t retry_at; /* when an idle slot may connect again */
    uint32_t events;  /* registered with epoll */
    char *out;
    size_t out_len, out_off, out_cap;
    char *in;
    size_t in_len, in_off, in_cap;
    flight *flights; /* ring of `pipeline` requests sent and unanswered */
    size_t f_start, f_count;
} slot;

typedef struct blast_run_state {
    const blast_spec *spec;
    blast_result *res;
    slot *slots;
    size_t nslots, pipeline;
    size_t next; /* next request to send */
    size_t done; /* requests answered or lost */
    int epfd;
    int fatal;
} blast_run_state;

/* Grows *buf so that `need` bytes fit. Returns 0 or -1. */
static int reserve(char **buf, size_t *cap, size_t need)
{
    if (need <= *cap)
        return 0;
    size_t n = *cap ? *cap : 4096;
    while (n < need)
        n *= 2;
    char *grown = realloc(*buf, n);
    if (!grown)
        return -1;
    *buf = grown;
    *cap = n;
    return 0;
}

static void set_events(blast_run_state *st, slot *s, uint32_t events)
{
    if (s->events == events)
        return;
    struct epoll_event ev = {.events = events, .data.u32 = (uint32_t)(s - st->slots)};
    epoll_ctl(st->epfd, EPOLL_CTL_MOD, s->fd, &ev);
    s->events = events;
}

static void deliver(blast_run_state *st, size_t index, int status, char *body, size_t len)
{
    blast_result *res = st->res;
    st->done++;
    if (status == 0) {
        res->lost++;
    } else {
        res->responses++;
        res->by_status[status]++;
    }
    if (!st->spec->on_response)
        return;
    if (!body) {
        st->spec->on_response(st->spec->ctx, index, status, NULL, 0);
        return;
    }
    /* The input buffer always has a spare byte past its data (see slot_read),
     * so the body can be NUL-terminated for the callback and restored. */
    char saved = body[len];
    body[len] = '\0';
    st->spec->on_response(st->spec->ctx, index, status, body, len);
    body[len] = saved;
}

/* Ends the slot's connection. Requests still in flight are lost: they are not
 * sent again, because the server may have acted on them. */
static void slot_drop(blast_run_state *st, slot *s, int error, const char *why)
{
    if (error || s->f_count > 0) {
        st->res->transport_errors++;
        if (why)
            snprintf(st->res->errstr, sizeof(st->res->errstr), "%s", why);
    }
    while (s->f_count > 0) {
        flight f = s->flights[s->f_start];
        s->f_start = (s->f_start + 1) % st->pipeline;
        s->f_count--;
        deliver(st, f.index, 0, NULL, 0);
    }
    if (s->fd >= 0) {
        epoll_ctl(st->epfd, EPOLL_CTL_DEL, s->fd, NULL);
        close(s->fd);
    }
    s->fd = -1;
    s->out_len = s->out_off = s->in_len = s->in_off = 0;
    s->f_start = 0;
    s->closing = 0;
    s->events = 0;
    /* A connection that never answered counts against the slot, so a server
     * that accepts and hangs up cannot make us reconnect forever. */
    if (s->answered == 0)
        s->failures++;
    s->answered = 0;
    if (s->failures >= BLAST_CONNECT_TRIES) {
        s->state = SLOT_DEAD;
        return;
    }
    s->state = SLOT_IDLE;
    s->retry_at = s->failures ? clock_mono_ms() + (5 << s->failures) : 0;
}

static void slot_connect(blast_run_state *st, slot *s)
{
    char why[128];
    s->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (s->fd < 0) {
        snprintf(why, sizeof(why), "socket: %s", strerror(errno));
        slot_drop(st, s, 1, why);
        return;
    }
    int one = 1;
    setsockopt(s->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_port = htons((uint16_t)st->spec->port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    if (connect(s->fd, (struct sockaddr *)&a, sizeof(a)) < 0 && errno != EINPROGRESS) {
        snprintf(why, sizeof(why), "connect to 127.0.0.1:%d: %s", st->spec->port, strerror(errno));
        slot_drop(st, s, 1, why);
        return;
    }
    s->state = SLOT_CONNECTING;
    s->events = EPOLLOUT;
    struct epoll_event ev = {.events = s->events, .data.u32 = (uint32_t)(s - st->slots)};
    if (epoll_ctl(st->epfd, EPOLL_CTL_ADD, s->fd, &ev) < 0) {
        snprintf(why, sizeof(why), "epoll_ctl: %s", strerror(errno));
        slot_drop(st, s, 1, why);
    }
}

static void slot_write(blast_run_state *st, slot *s)
{
    while (s->out_off < s->out_len) {
        ssize_t n = send(s->fd, s->out + s->out_off, s->out_len - s->out_off, MSG_NOSIGNAL);
        if (n > 0) {
            s->out_off += (size_t)n;
        } else if (n < 0 && errno == EINTR) {
            continue;
        } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            break;
        } else {
            char why[128];
            snprintf(why, sizeof(why), "send: %s", strerror(errno));
            slot_drop(st, s, 1, why);
            return;
        }
    }
    if (s->out_off == s->out_len)
        s->out_off = s->out_len = 0;
    set_events(st, s, EPOLLIN | (s->out_len ? EPOLLOUT : 0));
}

/* Builds requests into the slot until its pipeline is full, then writes. */
static void slot_fill(blast_run_state *st, slot *s)
{
    const blast_spec *spec = st->spec;
    while (!s->closing && s->f_count < st->pipeline && st->next < spec->requests) {
        if (reserve(&s->out, &s->out_cap, s->out_len + BLAST_REQUEST_MAX) < 0) {
            snprintf(st->res->errstr, sizeof(st->res->errstr), "out of memory");
            st->fatal = 1;
            return;
        }
        size_t index = st->next;
        size_t n = spec->build(spec->ctx, index, s->out + s->out_len, BLAST_REQUEST_MAX);
        if (n == 0 || n > BLAST_REQUEST_MAX) {
            snprintf(st->res->errstr, sizeof(st->res->errstr),
                     "build of request %zu returned %zu (room: %d)", index, n, BLAST_REQUEST_MAX);
            st->fatal = 1;
            return;
        }
        flight *f = &s->flights[(s->f_start + s->f_count) % st->pipeline];
        f->index = index;
        f->head = n >= 5 && memcmp(s->out + s->out_len, "HEAD ", 5) == 0;
        s->f_count++;
        s->out_len += n;
        st->next++;
    }
    slot_write(st, s);
}

/* Parses every complete response in the input buffer. Returns -1 when the
 * slot was dropped. */
static int slot_parse(blast_run_state *st, slot *s, int at_eof)
{
    while (s->in_off < s->in_len) {
        if (s->f_count == 0) {
            slot_drop(st, s, 1, "bytes from the server that answer no request");
            return -1;
        }
        flight f = s->flights[s->f_start];
        blast_response r;
        int rc = blast_parse(s->in + s->in_off, s->in_len - s->in_off, f.head, at_eof, &r);
        if (rc == 0)
            break;
        if (rc < 0) {
            slot_drop(st, s, 1, "malformed HTTP response");
            return -1;
        }
        s->in_off += r.consumed;
        if (r.interim)
            continue;
        s->f_start = (s->f_start + 1) % st->pipeline;
        s->f_count--;
        s->answered++;
        s->failures = 0;
        deliver(st, f.index, r.status, (char *)r.body, r.body_len);
        if (r.close) {
            s->closing = 1;
            break;
        }
    }
    if (s->in_off == s->in_len)
        s->in_off = s->in_len = 0;
    return 0;
}

static void slot_read(blast_run_state *st, slot *s)
{
    for (;;) {
        if (s->in_off > 0 && s->in_off == s->in_len)
            s->in_off = s->in_len = 0;
        /* +1: the spare byte that deliver() NUL-terminates bodies with. */
        if (reserve(&s->in, &s->in_cap, s->in_len + BLAST_READ_CHUNK + 1) < 0) {
            slot_drop(st, s, 1, "out of memory");
            return;
        }
        ssize_t n = recv(s->fd, s->in + s->in_len, s->in_cap - s->in_len - 1, 0);
        if (n > 0) {
            s->in_len += (size_t)n;
            if (slot_parse(st, s, 0) < 0)
                return;
            if (s->closing)
                break;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            break;
        if (n == 0) {
            if (slot_parse(st, s, 1) < 0)
                return;
            /* A truncated answer, or requests the server never answered. */
            slot_drop(st, s, 0,
                      s->f_count ? "the server closed a connection with requests in flight" : NULL);
            return;
        }
        char why[128];
        snprintf(why, sizeof(why), "recv: %s", strerror(errno));
        slot_drop(st, s, 1, why);
        return;
    }
    if (s->closing) {
        slot_drop(st, s, 0, "the server closed a connection with requests in flight");
        return;
    }
    slot_fill(st, s);
}

static void slot_event(blast_run_state *st, slot *s, uint32_t events)
{
    if (s->state == SLOT_CONNECTING) {
        int err = 0;
        socklen_t len = sizeof(err);
        if (getsockopt(s->fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
            err = errno;
        if (err) {
            char why[128];
            snprintf(why, sizeof(why), "connect to 127.0.0.1:%d: %s", st->spec->port,
                     strerror(err));
            slot_drop(st, s, 1, why);
            return;
        }
        s->state = SLOT_OPEN;
        st->res->connects++;
        slot_fill(st, s);
        return;
    }
    if (s->state != SLOT_OPEN)
        return;
    if (events & (EPOLLIN | EPOLLHUP | EPOLLERR)) {
        slot_read(st, s);
        if (s->state != SLOT_OPEN)
            return;
    }
    if (events & EPOLLOUT)
        slot_write(st, s);
}

/* Enough descriptors for the connections, when the hard limit allows. */
static void raise_nofile(size_t need)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur >= need)
        return;
    rl.rlim_cur = rl.rlim_max == RLIM_INFINITY || rl.rlim_max > need ? need : rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
}

size_t blast_count(const blast_result *r, int status)
{
    return status >= 100 && status < BLAST_STATUS_MAX ? r->by_status[status] : 0;
}

int blast_run(const blast_spec *spec, blast_result *out)
{
    memset(out, 0, sizeof(*out));
    int64_t start = clock_mono_ms();
    if (!spec->build || spec->connections == 0 || spec->port <= 0 || spec->port > 65535) {
        snprintf(out->errstr, sizeof(out->errstr), "bad spec: needs build, connections, port");
        out->missing = spec->requests;
        return -1;
    }
    if (spec->requests == 0)
        return 0;

    blast_run_state st = {.spec = spec, .res = out, .epfd = -1};
    st.pipeline = spec->pipeline ? spec->pipeline : 1;
    st.nslots = spec->connections < spec->requests ? spec->connections : spec->requests;
    int64_t deadline = start + (spec->timeout_ms > 0 ? spec->timeout_ms : 60000);
    raise_nofile(st.nslots + 64);

    st.epfd = epoll_create1(EPOLL_CLOEXEC);
    st.slots = calloc(st.nslots, sizeof(*st.slots));
    if (st.epfd < 0 || !st.slots) {
        snprintf(out->errstr, sizeof(out->errstr), "cannot set up: %s", strerror(errno));
        st.fatal = 1;
        goto done;
    }
    for (size_t i = 0; i < st.nslots; i++) {
        st.slots[i].fd = -1;
        st.slots[i].flights = calloc(st.pipeline, sizeof(flight));
        if (!st.slots[i].flights) {
            snprintf(out->errstr, sizeof(out->errstr), "out of memory");
            st.fatal = 1;
            goto done;
        }
    }
    for (size_t i = 0; i < st.nslots; i++)
        slot_connect(&st, &st.slots[i]);

    struct epoll_event events[256];
    while (st.done < spec->requests && !st.fatal) {
        int64_t now = clock_mono_ms();
        if (now >= deadline) {
            out->timed_out = 1;
            break;
        }
        int64_t wake = deadline;
        size_t live = 0;
        for (size_t i = 0; i < st.nslots; i++) {
            slot *s = &st.slots[i];
            if (s->state == SLOT_IDLE && st.next < spec->requests) {
                if (now >= s->retry_at)
                    slot_connect(&st, s);
                else if (s->retry_at < wake)
                    wake = s->retry_at;
            }
            if (s->state != SLOT_DEAD && (s->state != SLOT_IDLE || st.next < spec->requests))
                live++;
        }
        if (live == 0)
            break; /* every slot gave up: errstr holds the last reason */
        int64_t wait = wake - now;
        if (wait > 100)
            wait = 100;
        if (wait < 0)
            wait = 0;
        int n = epoll_wait(st.epfd, events, 256, (int)wait);
        if (n < 0 && errno != EINTR) {
            snprintf(out->errstr, sizeof(out->errstr), "epoll_wait: %s", strerror(errno));
            break;
        }
        for (int i = 0; i < n && !st.fatal; i++)
            slot_event(&st, &st.slots[events[i].data.u32], events[i].events);
    }

done:
    out->missing = spec->requests - out->responses;
    if (out->timed_out)
        snprintf(out->errstr, sizeof(out->errstr),
                 "timed out after %d ms: %zu of %zu requests answered, %zu lost, %zu unsent",
                 spec->timeout_ms > 0 ? spec->timeout_ms : 60000, out->responses, spec->requests,
                 out->lost, spec->requests - st.next);
    for (size_t i = 0; st.slots && i < st.nslots; i++) {
        if (st.slots[i].fd >= 0)
            close(st.slots[i].fd);
        free(st.slots[i].out);
        free(st.slots[i].in);
        free(st.slots[i].flights);
    }
    free(st.slots);
    if (st.epfd >= 0)
        close(st.epfd);
    out->elapsed_ms = clock_mono_ms() - start;
    return out->missing == 0 && !st.fatal ? 0 : -1;
}
