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

/* Most entries of a script call's argument vector. */
#define SCRIPTS_ARGV_MAX 72

/* The argument vector of one call of sc with nkeys keys followed by nargs
 * arguments: EVALSHA with the digest, or EVAL with the text when by_text (a
 * restarted Redis answered NOSCRIPT). argv and lens hold cap entries
 * (SCRIPTS_ARGV_MAX for one buyer's call; more for a batch); numkeys (12
 * bytes) is text the vector points to. Returns argc, or -1 when the call has
 * more than cap entries. Pure. */
int scripts_argv(const script *sc, int by_text, int nkeys, int nargs, const char *const *keys_args,
                 const char **argv, size_t *lens, int cap, char *numkeys);

/* A blocking call of sc on c: EVALSHA, then EVAL with the text when Redis
 * forgot the script (NOSCRIPT; also when sc's digest is not known yet).
 * Returns the reply as it came (the caller judges and frees it), NULL when
 * the connection failed or the call has too many entries. */
redisReply *scripts_call(redisContext *c, const script *sc, int nkeys, int nargs,
                         const char *const *keys_args);

/* True when reply is Redis' NOSCRIPT error (a restarted Redis forgot the
 * scripts): the caller sends EVAL with the text instead. */
int scripts_is_noscript(const redisReply *reply);

#endif
