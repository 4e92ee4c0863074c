/* redis_nodes_many.c: redis_nodes' commands over many nodes at once:
 * pipelines grouped by node, and scans of every master. */
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "redis_nodes.h"
#include "redis_nodes_state.h"

/* --- pipelines ----------------------------------------------------------------------- */

/* The node of each of the n commands (at[k]), every one of them connected.
 * Returns 0, or -1 (logged) when a node is unknown or does not answer. */
static int pipeline_route(redis_nodes *rn, size_t n, int argc, const char **argv, size_t *at)
{
    for (size_t k = 0; k < n; k++) {
        const char *key = argv[k * (size_t)argc + 1];
        int i = redis_nodes_index_of_key(rn, key, strlen(key));
        if (i < 0)
            return -1;
        at[k] = (size_t)i;
    }
    for (size_t k = 0; k < n; k++)
        if (!redis_nodes_conn_fresh(rn, at[k]))
            return -1;
    return 0;
}

/* Whether any of the n commands goes to node i. */
static int pipeline_has(size_t i, size_t n, const size_t *at)
{
    for (size_t k = 0; k < n; k++)
        if (at[k] == i)
            return 1;
    return 0;
}

/* Writes node i's share of the commands at once. Returns 0, or -1 when the
 * node failed (dropped, logged). */
static int pipeline_write(redis_nodes *rn, size_t i, size_t n, int argc, const char **argv,
                          const size_t *at)
{
    redisContext *c = rn->nodes[i].c;
    int done = 0;
    for (size_t k = 0; k < n; k++)
        if (at[k] == i &&
            redisAppendCommandArgv(c, argc, argv + k * (size_t)argc, NULL) != REDIS_OK)
            goto fail;
    while (!done)
        if (redisBufferWrite(c, &done) != REDIS_OK)
            goto fail;
    return 0;
fail:
    redis_nodes_lost(rn, i, "pipeline");
    return -1;
}

/* Reads node i's replies into replies[k], as they come. Returns 0, or -1
 * when the node failed (dropped, logged). */
static int pipeline_read(redis_nodes *rn, size_t i, size_t n, const size_t *at,
                         redisReply **replies)
{
    for (size_t k = 0; k < n; k++) {
        if (at[k] != i)
            continue;
        if (redisGetReply(rn->nodes[i].c, (void **)&replies[k]) != REDIS_OK || !replies[k]) {
            redis_nodes_lost(rn, i, "pipeline");
            return -1;
        }
    }
    return 0;
}

/* Writes every node's share first, so the nodes work at once, then reads
 * every node that took its share, also when another failed: a connection
 * must not be left with replies to read. Returns 0 or -1. */
static int pipeline_exchange(redis_nodes *rn, size_t n, int argc, const char **argv,
                             const size_t *at, redisReply **replies)
{
    int rc = 0;
    for (size_t i = 0; i < rn->nnodes; i++)
        if (pipeline_has(i, n, at) && pipeline_write(rn, i, n, argc, argv, at) < 0)
            rc = -1;
    for (size_t i = 0; i < rn->nnodes; i++)
        if (pipeline_has(i, n, at) && rn->nodes[i].c && pipeline_read(rn, i, n, at, replies) < 0)
            rc = -1;
    return rc;
}

int redis_nodes_pipeline(redis_nodes *rn, size_t n, int argc, const char **argv,
                         redisReply **replies)
{
    for (size_t k = 0; k < n; k++)
        replies[k] = NULL;
    size_t *at = malloc((n ? n : 1) * sizeof(*at));
    int rc = at ? pipeline_route(rn, n, argc, argv, at) : -1;
    if (rc == 0)
        rc = pipeline_exchange(rn, n, argc, argv, at, replies);
    /* Only now the redirects, one command at a time: a follow sends on
     * connections that must have nothing left to read. */
    for (size_t k = 0; rc == 0 && k < n; k++) {
        command cmd = {
            .argc = argc, .argv = argv + k * (size_t)argc, .what = argv[k * (size_t)argc]};
        redisReply *r = redis_nodes_settle(rn, at[k], replies[k], &cmd);
        if (!r)
            rc = -1;
        replies[k] = redis_nodes_judge(rn, r, cmd.what);
    }
    for (size_t k = 0; rc < 0 && k < n; k++) {
        freeReplyObject(replies[k]);
        replies[k] = NULL;
    }
    free(at);
    return rc;
}

/* --- scans ---------------------------------------------------------------------------- */

/* One SCAN page on node i from cursor (updated), each called per key. The
 * connection is looked up anew per page: a callback's command may have
 * dropped it, and a cursor outlives its connection. Returns as
 * redis_nodes_scan. */
static int scan_page(redis_nodes *rn, size_t i, char *cursor, size_t cap, const char *pattern,
                     redis_nodes_scan_fn each, void *ctx)
{
    redisContext *c = redis_nodes_conn_fresh(rn, i);
    if (!c)
        return -1;
    int lost;
    int rc = backend_redis_scan_page(c, cursor, cap, pattern, each, ctx, rn->component, &lost);
    if (lost)
        redis_nodes_lost(rn, i, "SCAN");
    return rc;
}

int redis_nodes_scan(redis_nodes *rn, const char *pattern, redis_nodes_scan_fn each, void *ctx)
{
    /* The masters as they are now, by node index: a callback's command may
     * read the map again, and every master of this moment is scanned once. */
    size_t n = redis_nodes_count(rn);
    if (n == 0)
        return -1;
    size_t *nodes = malloc(n * sizeof(*nodes));
    if (!nodes)
        return -1;
    for (size_t m = 0; m < n; m++)
        nodes[m] = rn->nseeds ? rn->masters[m] : 0;
    int rc = 0;
    for (size_t m = 0; rc == 0 && m < n; m++) {
        char cursor[32] = "0";
        do
            rc = scan_page(rn, nodes[m], cursor, sizeof(cursor), pattern, each, ctx);
        while (rc == 0 && strcmp(cursor, "0") != 0);
    }
    free(nodes);
    return rc;
}
