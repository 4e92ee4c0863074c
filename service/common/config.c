/* config.c: a config's keys set from text, checked together, read from a file
 * and printed back; the keys themselves are config_keys.c's table. */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "array.h"
#include "buyer_token.h"
#include "config_key.h"
#include "validate.h"

/* An enum field is set through an int, as the other numbers are. */
_Static_assert(sizeof(config_buyer_auth) == sizeof(int), "config_buyer_auth is not int-sized");
_Static_assert(sizeof(config_order_guard) == sizeof(int), "config_order_guard is not int-sized");

static int parse_bool(const char *v, int *out)
{
    static const char *yes[] = {"1", "true", "yes", "on"};
    static const char *no[] = {"0", "false", "no", "off"};
    for (size_t i = 0; i < 4; i++) {
        if (strcasecmp(v, yes[i]) == 0)
            return *out = 1, 0;
        if (strcasecmp(v, no[i]) == 0)
            return *out = 0, 0;
    }
    return -1;
}

/* "a, b or c": the words of an enum key, for its error message. */
static void list_words(const config_key *k, char *out, size_t outlen)
{
    size_t at = 0;
    out[0] = '\0';
    for (size_t i = 0; k->words[i] && at < outlen; i++) {
        const char *sep = i == 0 ? "" : k->words[i + 1] ? ", " : " or ";
        int n = snprintf(out + at, outlen - at, "%s%s", sep, k->words[i]);
        if (n < 0)
            return;
        at += (size_t)n;
    }
}

int config_key_set(config *cfg, const config_key *k, const char *value, char *err, size_t errlen)
{
    char *field = (char *)cfg + k->offset;
    if (k->type == CONFIG_KEY_ENUM) {
        for (int i = 0; k->words[i]; i++) {
            if (strcasecmp(value, k->words[i]) == 0)
                return *(int *)field = i, 0;
        }
        char words[128];
        list_words(k, words, sizeof(words));
        snprintf(err, errlen, "%s: expected %s, got '%s'", k->name, words, value);
        return -1;
    }
    if (k->type == CONFIG_KEY_STR) {
        char why[CONFIG_ERRLEN];
        if (k->check && k->check(value, why, sizeof(why)) < 0) {
            snprintf(err, errlen, "%s: %s", k->name, why);
            return -1;
        }
        char *copy = strdup(value);
        if (!copy) {
            snprintf(err, errlen, "%s: out of memory", k->name);
            return -1;
        }
        free(*(char **)field);
        *(char **)field = copy;
        return 0;
    }
    if (k->type == CONFIG_KEY_BOOL) {
        if (parse_bool(value, (int *)field) < 0) {
            snprintf(err, errlen, "%s: expected true or false, got '%s'", k->name, value);
            return -1;
        }
        return 0;
    }
    if (k->words && strcasecmp(value, k->words[0]) == 0)
        return *(int *)field = CONFIG_WAIT_AUTO, 0;
    int64_t n;
    if (validate_i64(value, strlen(value), &n) < 0) {
        snprintf(err, errlen, "%s: expected an integer%s%s, got '%s'", k->name,
                 k->words ? " or " : "", k->words ? k->words[0] : "", value);
        return -1;
    }
    if (n < k->min || n > k->max) {
        snprintf(err, errlen, "%s: %lld is out of range [%ld, %ld]", k->name, (long long)n, k->min,
                 k->max);
        return -1;
    }
    *(int *)field = (int)n;
    return 0;
}

void config_init(config *cfg)
{
    char err[CONFIG_ERRLEN];
    memset(cfg, 0, sizeof(*cfg));
    for (size_t i = 0; i < config_nkeys; i++)
        config_key_set(cfg, &config_keys[i], config_keys[i].fallback, err, sizeof(err));
}

void config_free(config *cfg)
{
    if (!cfg)
        return;
    for (size_t i = 0; i < config_nkeys; i++) {
        if (config_keys[i].type != CONFIG_KEY_STR)
            continue;
        char **field = (char **)((char *)cfg + config_keys[i].offset);
        free(*field);
        *field = NULL;
    }
}

int config_check(const config *cfg, char *err, size_t errlen)
{
    size_t secret = cfg->buyer_token_secret ? strlen(cfg->buyer_token_secret) : 0;
    if (cfg->buyer_auth == CONFIG_BUYER_AUTH_TOKEN && secret < BUYER_TOKEN_SECRET_MIN) {
        snprintf(err, errlen,
                 "buyer_token_secret: buyer_auth = token needs a secret of at least %d bytes, "
                 "this one has %zu (e.g. openssl rand -base64 48, in SECKILL_BUYER_TOKEN_SECRET)",
                 BUYER_TOKEN_SECRET_MIN, secret);
        return -1;
    }
    return 0;
}

/* config_set for a key set at `where` (a file's path and line). */
static int set_at(config *cfg, const char *key, const char *value, const char *where, char *err,
                  size_t errlen)
{
    if (config_key_skip_retired(key, strlen(key), where))
        return 0;
    const config_key *k = config_key_find(key, strlen(key));
    if (!k) {
        snprintf(err, errlen, "%s: unknown key", key);
        return -1;
    }
    return config_key_set(cfg, k, value, err, errlen);
}

int config_set(config *cfg, const char *key, const char *value, char *err, size_t errlen)
{
    return set_at(cfg, key, value, "config", err, errlen);
}

static char *trim(char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    char *end = s + strlen(s);
    while (end > s && isspace((unsigned char)end[-1]))
        *--end = '\0';
    return s;
}

int config_parse_text(config *cfg, const char *text, const char *origin, char *err, size_t errlen)
{
    char *copy = strdup(text);
    if (!copy) {
        snprintf(err, errlen, "%s: out of memory", origin);
        return -1;
    }
    int lineno = 0, rc = 0;
    char *next = copy;
    while (next && rc == 0) {
        char *line = next;
        next = strchr(line, '\n');
        if (next)
            *next++ = '\0';
        lineno++;
        char *hash = strchr(line, '#');
        if (hash)
            *hash = '\0';
        char *s = trim(line);
        if (*s == '\0')
            continue;
        char *eq = strchr(s, '=');
        char sub[CONFIG_ERRLEN];
        if (!eq) {
            snprintf(err, errlen, "%s:%d: expected 'key = value'", origin, lineno);
            rc = -1;
        } else {
            *eq = '\0';
            char where[CONFIG_ERRLEN];
            snprintf(where, sizeof(where), "%s:%d", origin, lineno);
            if (set_at(cfg, trim(s), trim(eq + 1), where, sub, sizeof(sub)) < 0) {
                snprintf(err, errlen, "%s: %s", where, sub);
                rc = -1;
            }
        }
    }
    free(copy);
    return rc;
}

int config_load_file(config *cfg, const char *path, char *err, size_t errlen)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "config file %s: %s", path, strerror(errno));
        return -1;
    }
    char *text = NULL;
    size_t len = 0, cap = 0, n;
    char chunk[4096];
    while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0) {
        char *grown = array_grow(text, &cap, len + n + 1, 1, sizeof(chunk));
        if (!grown) {
            free(text);
            fclose(f);
            snprintf(err, errlen, "config file %s: out of memory", path);
            return -1;
        }
        text = grown;
        memcpy(text + len, chunk, n);
        len += n;
    }
    fclose(f);
    if (!text)
        return 0;
    text[len] = '\0';
    int rc = config_parse_text(cfg, text, path, err, errlen);
    free(text);
    return rc;
}

void config_print(const config *cfg, FILE *out)
{
    for (size_t i = 0; i < config_nkeys; i++) {
        const char *field = (const char *)cfg + config_keys[i].offset;
        switch (config_keys[i].type) {
        case CONFIG_KEY_INT:
            if (config_keys[i].words && *(const int *)field == CONFIG_WAIT_AUTO)
                fprintf(out, "%s = %s\n", config_keys[i].name, config_keys[i].words[0]);
            else
                fprintf(out, "%s = %d\n", config_keys[i].name, *(const int *)field);
            break;
        case CONFIG_KEY_BOOL: {
            /* A switch whose default is spelled off (lab) prints as on/off. */
            int switch_words = strcmp(config_keys[i].fallback, "off") == 0;
            int on = *(const int *)field;
            fprintf(out, "%s = %s\n", config_keys[i].name,
                    switch_words ? (on ? "on" : "off") : (on ? "true" : "false"));
            break;
        }
        case CONFIG_KEY_ENUM:
            fprintf(out, "%s = %s\n", config_keys[i].name,
                    config_keys[i].words[*(const int *)field]);
            break;
        case CONFIG_KEY_STR: {
            const char *s = *(char *const *)field;
            fprintf(out, "%s = %s\n", config_keys[i].name,
                    config_key_masked(&config_keys[i], s) ? "****" : (s ? s : ""));
            break;
        }
        }
    }
}
