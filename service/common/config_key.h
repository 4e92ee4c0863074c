/* config_key.h: a config key and the table of them (config_keys.c), shared
 * by config.c (setting and printing keys) and config_load.c (environment,
 * flags, --help); the rest of the service uses config.h. It names the config
 * as struct config only, so that config.h's module and this one make no circle. */
#ifndef SECKILL_CONFIG_KEY_H
#define SECKILL_CONFIG_KEY_H

#include <stddef.h>

struct config;

/* CONFIG_KEY_ENUM: one word of a fixed list (any case), kept as its index in an enum field. */
typedef enum { CONFIG_KEY_INT, CONFIG_KEY_BOOL, CONFIG_KEY_STR, CONFIG_KEY_ENUM } config_key_type;

typedef struct config_key {
    const char *name;
    config_key_type type;
    size_t offset;
    const char *fallback;
    long min, max;
    int secret;
    const char *const *words; /* CONFIG_KEY_ENUM: the enum's values by name, NULL-terminated */
    const char *help;
    /* CONFIG_KEY_STR: a value's own rule (NULL: any text); -1 with why when broken */
    int (*check)(const char *value, char *why, size_t whylen);
} config_key;

/* The keys, config_nkeys of them, in the order --help and --print-config list them. */
extern const config_key config_keys[];
extern const size_t config_nkeys;

/* The key called name (len bytes), or NULL. */
const config_key *config_key_find(const char *name, size_t len);

/* When name (len bytes) is a retired key: logs, once for the place `where`
 * it was set (a file's path, "environment", "flag"), that it is ignored and
 * what took its place, and returns 1. 0 for any other name. */
int config_key_skip_retired(const char *name, size_t len, const char *where);

/* Sets k in cfg from its text value. Returns 0, or -1 with err naming the key. */
int config_key_set(struct config *cfg, const config_key *k, const char *value, char *err,
                   size_t errlen);

/* Whether a value of k is shown as ****: secrets are, but a conninfo only
 * when it carries a password. */
int config_key_masked(const config_key *k, const char *value);

#endif
