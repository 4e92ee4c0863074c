/* lab_zookeeper.c: the ZooKeeper lock recipe over one shared session. */
#include "lab_zookeeper.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The synchronous calls of the multi-threaded client (libzookeeper_mt). */
#define THREADED
#include <zookeeper/zookeeper.h>

#include "clock.h"
#include "lab_redis.h"
#include "log.h"

#define ZK_PATH_MAX 160

/* One ZooKeeper session. The client's threads call back into it until
 * zookeeper_close() returns, so it is freed only then, by whoever drops
 * its last reference (never inside a callback, never under the mutex:
 * zookeeper_close joins the thread that runs the callbacks). */
typedef struct zk_session {
    lab_zookeeper *owner;
    zhandle_t *zh;
    int refs;  /* under owner->mu: its users, plus one while it is current */
    int state; /* the last state its watcher saw (0 before the first) */
} zk_session;

/* A thread waiting for a predecessor node to go (on its own stack). */
typedef struct zk_waiter {
    struct zk_waiter *next;
    const char *path; /* the node it watches */
    zhandle_t *zh;    /* of its session */
    int woken;
    pthread_cond_t cond;
} zk_waiter;

struct lab_zookeeper {
    const config *cfg;
    pthread_mutex_t mu;
    pthread_cond_t state_changed; /* a session connected, or ended */
    zk_session *current;          /* NULL until first use, or after it ended */
    zk_waiter *waiters;
};

long long lab_zookeeper_sequence(const char *name)
{
    const char *dash = strrchr(name, '-');
    if (!dash || !dash[1])
        return -1;
    long long n = 0;
    for (const char *p = dash + 1; *p; p++) {
        if (!isdigit((unsigned char)*p) || n > 99999999999LL)
            return -1;
        n = n * 10 + (*p - '0');
    }
    return n;
}

int lab_zookeeper_item_path(char *buf, size_t len, int64_t item)
{
    return snprintf(buf, len, "/seckill/lab/item-%" PRId64, item);
}

/* The client's own log lines, into ours (it writes to stderr otherwise). */
static void client_log(const char *message)
{
    log_msg(LOG_WARN, "zookeeper", "%s", message);
}

static int session_over(int state)
{
    return state == ZOO_EXPIRED_SESSION_STATE || state == ZOO_AUTH_FAILED_STATE;
}

/* Wakes the waiters of zh whose node is `path` (NULL: all of them). Under
 * z->mu. */
static void wake(lab_zookeeper *z, zhandle_t *zh, const char *path)
{
    for (zk_waiter *w = z->waiters; w; w = w->next) {
        if (w->zh == zh && (!path || strcmp(w->path, path) == 0)) {
            w->woken = 1;
            pthread_cond_signal(&w->cond);
        }
    }
}

/* The session's watcher: its state, for those who wait to be connected;
 * once it is over, its waiters' nodes are gone with it. */
static void session_watcher(zhandle_t *zh, int type, int state, const char *path, void *ctx)
{
    (void)path;
    zk_session *s = ctx;
    lab_zookeeper *z = s->owner;
    if (type != ZOO_SESSION_EVENT)
        return;
    pthread_mutex_lock(&z->mu);
    s->state = state;
    if (session_over(state))
        wake(z, zh, NULL);
    pthread_cond_broadcast(&z->state_changed);
    pthread_mutex_unlock(&z->mu);
    if (session_over(state))
        log_msg(LOG_WARN, "zookeeper", "session ended (%s); a new one comes with the next lock",
                state == ZOO_EXPIRED_SESSION_STATE ? "expired" : "authentication failed");
}

/* The watch on a predecessor: it changed or went, so its successor looks
 * again. The client also passes session events to every watch: only the
 * end of the session matters here (a reconnection keeps the watches). */
static void node_watcher(zhandle_t *zh, int type, int state, const char *path, void *ctx)
{
    lab_zookeeper *z = ctx;
    if (type == ZOO_SESSION_EVENT && !session_over(state))
        return;
    pthread_mutex_lock(&z->mu);
    wake(z, zh, type == ZOO_SESSION_EVENT ? NULL : path);
    pthread_mutex_unlock(&z->mu);
}

lab_zookeeper *lab_zookeeper_create(const config *cfg)
{
    lab_zookeeper *z = calloc(1, sizeof(*z));
    if (!z)
        return NULL;
    z->cfg = cfg;
    if (clock_cond_init(&z->state_changed) < 0) {
        free(z);
        return NULL;
    }
    pthread_mutex_init(&z->mu, NULL);
    /* The library's level is process-wide; its lines go to client_log. */
    zoo_set_debug_level(ZOO_LOG_LEVEL_ERROR);
    return z;
}

static void session_close(zk_session *s)
{
    if (!s)
        return;
    zookeeper_close(s->zh);
    free(s);
}

/* Drops a reference to s; the last one closes it. */
static void session_put(lab_zookeeper *z, zk_session *s)
{
    pthread_mutex_lock(&z->mu);
    int last = --s->refs == 0;
    pthread_mutex_unlock(&z->mu);
    if (last)
        session_close(s);
}

void lab_zookeeper_free(lab_zookeeper *z)
{
    if (!z)
        return;
    if (z->current)
        session_put(z, z->current);
    pthread_cond_destroy(&z->state_changed);
    pthread_mutex_destroy(&z->mu);
    free(z);
}

/* Waits on cond until the monotonic time deadline_ms. 0 woken, -1 timed out. */
static int wait_until(pthread_cond_t *cond, pthread_mutex_t *mu, int64_t deadline_ms)
{
    struct timespec ts = {(time_t)(deadline_ms / 1000), (long)(deadline_ms % 1000) * 1000000L};
    return pthread_cond_timedwait(cond, mu, &ts) == ETIMEDOUT ? -1 : 0;
}

/* A new session (its client connects in the background). Under z->mu. */
static zk_session *session_new(lab_zookeeper *z)
{
    zk_session *s = calloc(1, sizeof(*s));
    if (!s)
        return NULL;
    s->owner = z;
    s->refs = 1; /* current */
    s->zh = zookeeper_init2(z->cfg->zookeeper_servers, session_watcher,
                            z->cfg->zookeeper_session_ms, NULL, s, 0, client_log);
    if (!s->zh) {
        log_msg(LOG_ERROR, "zookeeper", "cannot start a client for '%s': %s",
                z->cfg->zookeeper_servers, strerror(errno));
        free(s);
        return NULL;
    }
    return s;
}

/* A reference to the connected session, made (again) when there is none or
 * it ended; waits for it to connect until deadline_ms. NULL when it is not
 * connected by then. The caller drops it with session_put(). */
static zk_session *session_get(lab_zookeeper *z, int64_t deadline_ms)
{
    zk_session *ended = NULL;
    pthread_mutex_lock(&z->mu);
    zk_session *s = z->current;
    if (s && session_over(s->state)) {
        z->current = NULL;
        if (--s->refs == 0)
            ended = s;
        s = NULL;
    }
    if (!s)
        s = z->current = session_new(z);
    if (s)
        s->refs++;
    while (s && s->state != ZOO_CONNECTED_STATE && !session_over(s->state))
        if (wait_until(&z->state_changed, &z->mu, deadline_ms) < 0)
            break;
    int connected = s && s->state == ZOO_CONNECTED_STATE;
    pthread_mutex_unlock(&z->mu);
    session_close(ended);
    if (s && !connected) {
        log_msg(LOG_WARN, "zookeeper", "not connected to %s", z->cfg->zookeeper_servers);
        session_put(z, s);
        return NULL;
    }
    return s;
}

static void zk_warn(const char *what, const char *path, int rc)
{
    log_msg(LOG_WARN, "zookeeper", "%s %s: %s", what, path, zerror(rc));
}

/* The persistent parents of an item's folder: /seckill, /seckill/lab, it. */
static int make_parents(zhandle_t *zh, const char *dir)
{
    char path[ZK_PATH_MAX];
    for (const char *slash = strchr(dir + 1, '/');; slash = strchr(slash + 1, '/')) {
        size_t n = slash ? (size_t)(slash - dir) : strlen(dir);
        snprintf(path, sizeof(path), "%.*s", (int)n, dir);
        int rc = zoo_create(zh, path, NULL, -1, &ZOO_OPEN_ACL_UNSAFE, ZOO_PERSISTENT, NULL, 0);
        if (rc != ZOK && rc != ZNODEEXISTS) {
            zk_warn("create", path, rc);
            return -1;
        }
        if (!slash)
            return 0;
    }
}

/* Deletes the children of dir whose name contains `mark` (every child when
 * mark is NULL). 0, or -1 when ZooKeeper did not answer. */
static int delete_children(zhandle_t *zh, const char *dir, const char *mark)
{
    struct String_vector kids = {0, NULL};
    int rc = zoo_get_children(zh, dir, 0, &kids);
    if (rc == ZNONODE)
        return 0;
    if (rc != ZOK) {
        zk_warn("list", dir, rc);
        return -1;
    }
    int ok = 0;
    for (int i = 0; i < kids.count; i++) {
        if (mark && !strstr(kids.data[i], mark))
            continue;
        char path[ZK_PATH_MAX];
        snprintf(path, sizeof(path), "%s/%s", dir, kids.data[i]);
        rc = zoo_delete(zh, path, -1);
        if (rc != ZOK && rc != ZNONODE) {
            zk_warn("delete", path, rc);
            ok = -1;
        }
    }
    deallocate_String_vector(&kids);
    return ok;
}

/* Our ephemeral sequential node in dir, its path in ours. The token in
 * its name finds it again when the answer to the create was lost (the
 * node may exist all the same, and would hold the lock for as long as our
 * session lives: Curator's "protected" mode does the same). */
static sk_status create_node(zhandle_t *zh, const char *dir, const char *token, char *ours,
                             size_t len)
{
    char prefix[ZK_PATH_MAX], mark[48];
    snprintf(mark, sizeof(mark), "-%s-", token);
    if (snprintf(prefix, sizeof(prefix), "%s/lock%s", dir, mark) >= (int)sizeof(prefix))
        return SK_INTERNAL;
    int rc = ZNONODE;
    for (int attempt = 0; attempt < 2 && rc == ZNONODE; attempt++) {
        if (attempt > 0 && make_parents(zh, dir) < 0)
            return SK_BACKEND_DOWN;
        rc = zoo_create(zh, prefix, token, (int)strlen(token), &ZOO_OPEN_ACL_UNSAFE,
                        ZOO_EPHEMERAL_SEQUENTIAL, ours, (int)len);
    }
    if (rc == ZOK)
        return SK_OK;
    zk_warn("create", prefix, rc);
    if (rc == ZCONNECTIONLOSS || rc == ZOPERATIONTIMEOUT)
        delete_children(zh, dir, mark);
    return SK_BACKEND_DOWN;
}

/* In dir's children: whether ours (a name) is among them, and the name of
 * the node just before it in sequence order (pred[0] = 0: none, ours is
 * the lowest and holds the lock). */
static int find_predecessor(const struct String_vector *kids, const char *ours, char *pred,
                            size_t len)
{
    long long mine = lab_zookeeper_sequence(ours), best = -1;
    int found = 0;
    pred[0] = '\0';
    for (int i = 0; i < kids->count; i++) {
        const char *name = kids->data[i];
        long long seq = lab_zookeeper_sequence(name);
        if (strcmp(name, ours) == 0)
            found = 1;
        else if (seq >= 0 && seq < mine && seq > best) {
            best = seq;
            snprintf(pred, len, "%s", name);
        }
    }
    return found;
}

/* Waits until the watch on path fires, the session ends or deadline_ms.
 * SK_OK to look again, or SK_BACKEND_DOWN. */
static sk_status await_deletion(lab_zookeeper *z, zhandle_t *zh, const char *path,
                                int64_t deadline_ms)
{
    zk_waiter w = {.path = path, .zh = zh};
    if (clock_cond_init(&w.cond) < 0)
        return SK_BACKEND_DOWN;
    /* Listed before the watch is set: a deletion in between still wakes us. */
    pthread_mutex_lock(&z->mu);
    w.next = z->waiters;
    z->waiters = &w;
    pthread_mutex_unlock(&z->mu);
    /* A get, not an exists: on a node already gone, an exists-watch would
     * stay registered for its creation, which never comes. */
    char data[64];
    int dlen = sizeof(data);
    int rc = zoo_wget(zh, path, node_watcher, z, data, &dlen, NULL);
    pthread_mutex_lock(&z->mu);
    while (rc == ZOK && !w.woken)
        if (wait_until(&w.cond, &z->mu, deadline_ms) < 0)
            break;
    zk_waiter **p = &z->waiters;
    while (*p != &w)
        p = &(*p)->next;
    *p = w.next;
    pthread_mutex_unlock(&z->mu);
    pthread_cond_destroy(&w.cond);
    if (rc != ZOK && rc != ZNONODE) {
        zk_warn("watch", path, rc);
        return SK_BACKEND_DOWN;
    }
    return SK_OK;
}

/* Waits for our turn: SK_OK (ours is the lowest node: the lock is ours),
 * SK_BUSY (not by deadline_ms, or our node was deleted by a reset), or
 * SK_BACKEND_DOWN. */
static sk_status await_turn(lab_zookeeper *z, zhandle_t *zh, const char *dir, const char *ours,
                            int64_t deadline_ms)
{
    const char *name = strrchr(ours, '/') + 1;
    for (;;) {
        struct String_vector kids = {0, NULL};
        int rc = zoo_get_children(zh, dir, 0, &kids);
        if (rc != ZOK) {
            zk_warn("list", dir, rc);
            return SK_BACKEND_DOWN;
        }
        char pred[ZK_PATH_MAX];
        int found = find_predecessor(&kids, name, pred, sizeof(pred));
        deallocate_String_vector(&kids);
        if (!found)
            return SK_BUSY;
        if (!pred[0])
            return SK_OK;
        if (clock_mono_ms() >= deadline_ms)
            return SK_BUSY;
        char path[ZK_PATH_MAX];
        snprintf(path, sizeof(path), "%s/%s", dir, pred);
        sk_status st = await_deletion(z, zh, path, deadline_ms);
        if (st != SK_OK)
            return st;
    }
}

sk_status lab_zookeeper_lock(lab_ctx *c, const lab_request *r, int64_t *remaining)
{
    lab_zookeeper *z = c->zk;
    if (!z || !c->cfg->zookeeper_servers[0])
        return SK_NOT_CONFIGURED;
    int64_t deadline = lab_deadline(c);
    zk_session *s = session_get(z, deadline);
    if (!s)
        return SK_BACKEND_DOWN;
    char dir[ZK_PATH_MAX], ours[ZK_PATH_MAX], token[32];
    lab_zookeeper_item_path(dir, sizeof(dir), r->item);
    lab_ctx_token(c, token, sizeof(token));
    sk_status st = create_node(s->zh, dir, token, ours, sizeof(ours));
    if (st == SK_OK) {
        st = await_turn(z, s->zh, dir, ours, deadline);
        if (st == SK_OK)
            st = lab_check_work_take(c, r, &lab_redis_key_stock, NULL, remaining);
        /* The unlock, or a waiter giving up its place in the line. */
        int rc = zoo_delete(s->zh, ours, -1);
        if (rc != ZOK && rc != ZNONODE)
            zk_warn("delete", ours, rc);
    }
    session_put(z, s);
    return st;
}

sk_status lab_zookeeper_locks(lab_ctx *c, const lab_request *r, int64_t *count)
{
    *count = 0;
    lab_zookeeper *z = c->zk;
    if (!z || !c->cfg->zookeeper_servers[0])
        return SK_OK;
    zk_session *s = session_get(z, lab_deadline(c));
    if (!s)
        return SK_BACKEND_DOWN;
    char dir[ZK_PATH_MAX];
    lab_zookeeper_item_path(dir, sizeof(dir), r->item);
    struct String_vector kids = {0, NULL};
    int rc = zoo_get_children(s->zh, dir, 0, &kids);
    if (rc == ZOK)
        *count = kids.count;
    deallocate_String_vector(&kids);
    session_put(z, s);
    if (rc != ZOK && rc != ZNONODE) {
        zk_warn("list", dir, rc);
        return SK_BACKEND_DOWN;
    }
    return SK_OK;
}

int lab_zookeeper_clear(lab_zookeeper *z, int64_t item)
{
    if (!z || !z->cfg->zookeeper_servers[0])
        return 0;
    zk_session *s = session_get(z, clock_mono_ms() + z->cfg->lab_lock_wait_ms);
    if (!s)
        return -1;
    char dir[ZK_PATH_MAX];
    lab_zookeeper_item_path(dir, sizeof(dir), item);
    int rc = delete_children(s->zh, dir, NULL);
    session_put(z, s);
    return rc;
}
