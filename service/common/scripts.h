/* scripts.h: the Lua scripts of lua/, embedded at build time, and their
 * SHA1 digests as Redis reports them on SCRIPT LOAD. */
#ifndef SECKILL_SCRIPTS_H
#define SECKILL_SCRIPTS_H

#include <stddef.h>

#include <hiredis/hiredis.h>

typedef struct scripts_source {
    const char *name; /* file name without .lua */
    const char *text;
} scripts_source;

/* Generated from the lua folder by cmake/embed_lua.cmake; ends with {0, 0}. */
extern const scripts_source scripts_embedded[];

typedef enum script_id {
    SCRIPT_RESERVE_BATCH = 0,
    SCRIPT_LOCK_RELEASE,
    SCRIPT_ITEM_RESET,
    SCRIPT_RESTOCK,
    SCRIPT_QUEUE_MOVE,
    SCRIPT_HEARTBEAT,
    SCRIPT_SWEEP_RECOVER,
    SCRIPT_ORDER_RETURN,
    SCRIPT_ORDER_LOCK_RELEASE,
    SCRIPT_ROOM_RESET,
    SCRIPT_ROOM_JOIN,
    SCRIPT_ROOM_POLL,
    SCRIPT_DRAW_GRANT,
    SCRIPT_LAB_FENCE_READ,
    SCRIPT_LAB_FENCE_TAKE,
    SCRIPT_LAB_REENTRANT_LOCK,
    SCRIPT_LAB_REENTRANT_UNLOCK,
    SCRIPT_LAB_REENTRANT_RENEW,
    SCRIPT_COUNT
} script_id;

typedef struct script {
    const char *name;
    const char *text;
    size_t len;
    char sha[41];
} script;

typedef struct scripts {
    script s[SCRIPT_COUNT];
} scripts;

/* Finds the embedded texts of all scripts. Returns 0, or -1 when one is
 * missing from the build (a broken build, not a runtime condition). */
int scripts_init(scripts *sc);

/* SCRIPT LOAD of every script over c, filling the digests. Returns 0 or -1. */
int scripts_load(scripts *sc, redisContext *c);

/* The argument vector of one call of sc with nkeys keys followed by nargs
 * arguments: EVALSHA with the digest, or EVAL with the text when by_text (a
 * restarted Redis answered NOSCRIPT). argv and lens hold cap entries
 * (3 + nkeys + nargs suffice); numkeys (12
 * bytes) is text the vector points to. Returns argc, or -1 when the call has
 * more than cap entries. Pure. */
int scripts_argv(const script *sc, int by_text, int nkeys, int nargs, const char *const *keys_args,
                 const char **argv, size_t *lens, int cap, char *numkeys);

/* True when reply is Redis' NOSCRIPT error (a restarted Redis, or a new
 * master after a failover, forgot the scripts). */
int scripts_is_noscript(const redisReply *reply);

/* The NOSCRIPT fallback of every caller, blocking or not: whether a call of
 * a script answered r goes again with the script's text. Once: r is NOSCRIPT
 * and *by_text was 0 (now 1). Nothing ran; the text also loads the script on
 * that node for the calls that follow. */
int scripts_send_text(const redisReply *r, int *by_text);

/* Sends one call of argc entries and returns its reply as it came (an error
 * included), NULL when the connection failed. */
typedef redisReply *(*scripts_send_fn)(void *ctx, int argc, const char **argv, const size_t *lens);

/* A blocking call of sc through send(ctx, ...), any number of keys and
 * arguments: EVALSHA, then EVAL with the text after NOSCRIPT
 * (scripts_send_text; EVAL at once when sc's digest is not known yet).
 * Returns the reply as it came (the caller judges and frees it), NULL when
 * send failed or out of memory (logged). */
redisReply *scripts_run(const script *sc, int nkeys, int nargs, const char *const *keys_args,
                        scripts_send_fn send, void *ctx);

/* scripts_run on the one connection c. */
redisReply *scripts_call(redisContext *c, const script *sc, int nkeys, int nargs,
                         const char *const *keys_args);

#endif
