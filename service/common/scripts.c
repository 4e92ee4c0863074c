/* scripts.c: lookup and loading of the embedded Lua scripts. */
#include "scripts.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"

static const char *names[SCRIPT_COUNT] = {
    [SCRIPT_RESERVE_BATCH] = "reserve_batch",
    [SCRIPT_LOCK_RELEASE] = "lock_release",
    [SCRIPT_ITEM_RESET] = "item_reset",
    [SCRIPT_RESTOCK] = "restock",
    [SCRIPT_QUEUE_MOVE] = "queue_move",
    [SCRIPT_HEARTBEAT] = "heartbeat",
    [SCRIPT_SWEEP_RECOVER] = "sweep_recover",
    [SCRIPT_ORDER_RETURN] = "order_return",
    [SCRIPT_ORDER_LOCK_RELEASE] = "order_lock_release",
    [SCRIPT_ROOM_RESET] = "room_reset",
    [SCRIPT_ROOM_JOIN] = "room_join",
    [SCRIPT_ROOM_POLL] = "room_poll",
    [SCRIPT_DRAW_GRANT] = "draw_grant",
    [SCRIPT_LAB_FENCE_READ] = "lab_fence_read",
    [SCRIPT_LAB_FENCE_TAKE] = "lab_fence_take",
    [SCRIPT_LAB_REENTRANT_LOCK] = "lab_reentrant_lock",
    [SCRIPT_LAB_REENTRANT_UNLOCK] = "lab_reentrant_unlock",
    [SCRIPT_LAB_REENTRANT_RENEW] = "lab_reentrant_renew",
};

int scripts_init(scripts *sc)
{
    memset(sc, 0, sizeof(*sc));
    for (int id = 0; id < SCRIPT_COUNT; id++) {
        for (const scripts_source *src = scripts_embedded; src->name; src++) {
            if (strcmp(src->name, names[id]) == 0) {
                sc->s[id].name = src->name;
                sc->s[id].text = src->text;
                sc->s[id].len = strlen(src->text);
            }
        }
        if (!sc->s[id].text)
            return -1;
    }
    return 0;
}

int scripts_load(scripts *sc, redisContext *c)
{
    for (int id = 0; id < SCRIPT_COUNT; id++) {
        redisReply *r = redisCommand(c, "SCRIPT LOAD %b", sc->s[id].text, sc->s[id].len);
        int ok = r && r->type == REDIS_REPLY_STRING && r->len == 40;
        if (ok)
            memcpy(sc->s[id].sha, r->str, 41);
        freeReplyObject(r);
        if (!ok)
            return -1;
    }
    return 0;
}

int scripts_is_noscript(const redisReply *reply)
{
    return reply && reply->type == REDIS_REPLY_ERROR && strncmp(reply->str, "NOSCRIPT", 8) == 0;
}

int scripts_argv(const script *sc, int by_text, int nkeys, int nargs, const char *const *keys_args,
                 const char **argv, size_t *lens, int cap, char *numkeys)
{
    int argc = 3 + nkeys + nargs;
    if (nkeys < 0 || nargs < 0 || argc > cap)
        return -1;
    snprintf(numkeys, 12, "%d", nkeys);
    by_text = by_text || !sc->sha[0]; /* never loaded: no digest to name it by */
    argv[0] = by_text ? "EVAL" : "EVALSHA";
    argv[1] = by_text ? sc->text : sc->sha;
    argv[2] = numkeys;
    for (int i = 0; i < nkeys + nargs; i++)
        argv[3 + i] = keys_args[i];
    for (int i = 0; i < argc; i++)
        lens[i] = i == 1 && by_text ? sc->len : strlen(argv[i]);
    return argc;
}

int scripts_send_text(const redisReply *r, int *by_text)
{
    if (*by_text || !scripts_is_noscript(r))
        return 0;
    *by_text = 1;
    return 1;
}

redisReply *scripts_run(const script *sc, int nkeys, int nargs, const char *const *keys_args,
                        scripts_send_fn send, void *ctx)
{
    /* A block of its own: a call may hold any number of entries. */
    int cap = 3 + nkeys + nargs;
    const char **argv = malloc((size_t)cap * sizeof(*argv));
    size_t *lens = malloc((size_t)cap * sizeof(*lens));
    char numkeys[12];
    redisReply *r = NULL;
    int by_text = 0;
    if (!argv || !lens || nkeys < 0 || nargs < 0) {
        log_msg(LOG_ERROR, "scripts", "redis %s: cannot build the call", sc->name);
    } else {
        do {
            freeReplyObject(r);
            int argc = scripts_argv(sc, by_text, nkeys, nargs, keys_args, argv, lens, cap, numkeys);
            r = send(ctx, argc, argv, lens);
        } while (scripts_send_text(r, &by_text));
    }
    free(argv);
    free(lens);
    return r;
}

static redisReply *send_on(void *ctx, int argc, const char **argv, const size_t *lens)
{
    return redisCommandArgv(ctx, argc, argv, lens);
}

redisReply *scripts_call(redisContext *c, const script *sc, int nkeys, int nargs,
                         const char *const *keys_args)
{
    return scripts_run(sc, nkeys, nargs, keys_args, send_on, c);
}
