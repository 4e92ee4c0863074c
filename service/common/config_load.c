/* config_load.c: a binary's start-up settings: the defaults, a file, the
 * environment, then the flags; and its --help, --version, --print-config. */
#include "config.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "config_key.h"
#include "version.h"

static void env_name(const char *key, char *out, size_t outlen)
{
    size_t i = snprintf(out, outlen, "SECKILL_");
    for (; *key && i + 1 < outlen; key++)
        out[i++] = (char)toupper((unsigned char)*key);
    out[i] = '\0';
}

/* Which binaries read a key: a config file is shared by all three, and each
 * one's --help lists only the keys it reads. */
enum { READ_BY_SERVER = 1, READ_BY_WORKER = 2, READ_BY_ADMIN = 4, READ_BY_ALL = 7 };

static unsigned readers(const char *key)
{
    static const struct {
        const char *prefix;
        unsigned by;
    } table[] = {
        {"redis_", READ_BY_ALL},
        {"pg_", READ_BY_ALL},
        {"order_", READ_BY_ALL}, /* the worker and reconcile release the order locks */
        {"log_level", READ_BY_ALL},
        {"worker_", READ_BY_WORKER},
        {"migrations_", READ_BY_ADMIN},
        {"host", READ_BY_SERVER | READ_BY_WORKER},  /* the worker's /metrics listens on it */
        {"buyer_", READ_BY_SERVER | READ_BY_ADMIN}, /* seckill-admin buyer-token signs */
    };
    for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++)
        if (strncmp(key, table[i].prefix, strlen(table[i].prefix)) == 0)
            return table[i].by;
    return READ_BY_SERVER;
}

/* The binary a program name is (the server for any other: tests use their own names). */
static unsigned reader_of(const char *program)
{
    if (strcmp(program, "seckill-worker") == 0)
        return READ_BY_WORKER;
    if (strcmp(program, "seckill-admin") == 0)
        return READ_BY_ADMIN;
    return READ_BY_SERVER;
}

static void print_help(const char *program, FILE *out)
{
    fprintf(out,
            "Usage: %s [options]\n\n"
            "Options (each also a config file key, and an environment variable SECKILL_<KEY>;\n"
            "the other binaries' keys are accepted too, so that one config file serves all):\n",
            program);
    unsigned me = reader_of(program);
    for (size_t i = 0; i < config_nkeys; i++) {
        if (!(readers(config_keys[i].name) & me))
            continue;
        char flag[64];
        snprintf(flag, sizeof(flag), "--%s", config_keys[i].name);
        for (char *p = flag + 2; *p; p++)
            if (*p == '_')
                *p = '-';
        fprintf(out, "  %-26s %s (default: %s)\n", flag, config_keys[i].help,
                config_key_masked(&config_keys[i], config_keys[i].fallback)
                    ? "****"
                    : config_keys[i].fallback);
    }
    fprintf(out,
            "\n  %-26s %s\n  %-26s %s\n  %-26s %s\n  %-26s %s\n\n"
            "Precedence: defaults < config file < environment < flags.\n",
            "--config FILE", "read a config file first (also SECKILL_CONFIG)", "--print-config",
            "print the effective config (secrets masked) and exit", "--version",
            "print the version and exit", "--help", "print this help and exit");
}

/* Splits "--name" or "--name=value" into the key's name (with '_' for '-')
 * and the inline value (NULL: none). -1 when arg is no "--" option. */
static int flag_name(const char *arg, char *name, size_t cap, size_t *len,
                     const char **inline_value)
{
    if (strncmp(arg, "--", 2) != 0)
        return -1;
    arg += 2;
    const char *eq = strchr(arg, '=');
    *len = eq ? (size_t)(eq - arg) : strlen(arg);
    if (*len >= cap)
        return -1;
    for (size_t i = 0; i < *len; i++)
        name[i] = arg[i] == '-' ? '_' : arg[i];
    name[*len] = '\0';
    *inline_value = eq ? eq + 1 : NULL;
    return 0;
}

/* What the options ask besides keys: help, version, print, the file. */
typedef struct wants {
    int help, version, print;
    const char *file;
} wants;

/* Reads the options that are no key. Returns 0, or -1 with err. */
static int scan_wants(int argc, char **argv, wants *w, char *err, size_t errlen)
{
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0)
            w->help = 1;
        else if (strcmp(argv[i], "--version") == 0)
            w->version = 1;
        else if (strcmp(argv[i], "--print-config") == 0)
            w->print = 1;
        else if (strcmp(argv[i], "--config") == 0 && i + 1 < argc)
            w->file = argv[++i];
        else if (strcmp(argv[i], "--config") == 0) {
            snprintf(err, errlen, "option '--config' needs a value");
            return -1;
        } else if (strncmp(argv[i], "--config=", 9) == 0)
            w->file = argv[i] + 9;
    }
    return 0;
}

/* SECKILL_<KEY> of every key; a retired one is ignored with a warning. */
static int apply_environment(config *cfg, char *err, size_t errlen)
{
    char name[80];
    const char *retired;
    for (size_t i = 0; (retired = config_retired_name(i)) != NULL; i++) {
        env_name(retired, name, sizeof(name));
        if (getenv(name))
            config_key_skip_retired(retired, strlen(retired), name);
    }
    for (size_t i = 0; i < config_nkeys; i++) {
        env_name(config_keys[i].name, name, sizeof(name));
        const char *v = getenv(name);
        char sub[CONFIG_ERRLEN];
        if (v && config_key_set(cfg, &config_keys[i], v, sub, sizeof(sub)) < 0) {
            snprintf(err, errlen, "environment %s: %s", name, sub);
            return -1;
        }
    }
    return 0;
}

/* The value of the flag argv[*i] (inline, or the next argument, which it
 * takes). A boolean flag alone is true. NULL when a value is missing. */
static const char *flag_value(int argc, char **argv, int *i, const char *inline_value, int boolean)
{
    if (inline_value)
        return inline_value;
    if (boolean && (*i + 1 >= argc || strncmp(argv[*i + 1], "--", 2) == 0))
        return "true";
    return *i + 1 < argc ? argv[++*i] : NULL;
}

/* The flags that set keys, in order; a retired key's flag (and its value)
 * is ignored with a warning. Returns 0, or -1 with err. */
static int apply_flags(config *cfg, int argc, char **argv, char *err, size_t errlen)
{
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i], *inline_value, *value;
        char name[64];
        size_t len;
        if (strcmp(arg, "--print-config") == 0 || strncmp(arg, "--config=", 9) == 0)
            continue;
        if (strcmp(arg, "--config") == 0) {
            i++;
            continue;
        }
        int named = flag_name(arg, name, sizeof(name), &len, &inline_value) == 0;
        if (named && config_key_skip_retired(name, len, arg)) {
            flag_value(argc, argv, &i, inline_value, 1);
            continue;
        }
        const config_key *k = named ? config_key_find(name, len) : NULL;
        if (!k) {
            snprintf(err, errlen, "unknown option '%s' (see --help)", arg);
            return -1;
        }
        value = flag_value(argc, argv, &i, inline_value, k->type == CONFIG_KEY_BOOL);
        if (!value) {
            snprintf(err, errlen, "option '%s' needs a value", arg);
            return -1;
        }
        if (config_key_set(cfg, k, value, err, errlen) < 0)
            return -1;
    }
    return 0;
}

config_result config_load(config *cfg, const char *program, int argc, char **argv, FILE *out,
                          char *err, size_t errlen)
{
    wants w = {0, 0, 0, getenv("SECKILL_CONFIG")};
    if (scan_wants(argc, argv, &w, err, errlen) < 0)
        return CONFIG_ERROR;
    if (w.help) {
        print_help(program, out);
        return CONFIG_EXIT;
    }
    if (w.version) {
        fprintf(out, "%s %s\n", program, SECKILL_VERSION);
        return CONFIG_EXIT;
    }
    if (w.file && *w.file && config_load_file(cfg, w.file, err, errlen) < 0)
        return CONFIG_ERROR;
    if (apply_environment(cfg, err, errlen) < 0 || apply_flags(cfg, argc, argv, err, errlen) < 0)
        return CONFIG_ERROR;
    /* The buyer keys' rules concern only the binaries that read them: a
     * worker need not hold the buyers' secret. */
    if ((reader_of(program) & readers("buyer_auth")) && config_check(cfg, err, errlen) < 0)
        return CONFIG_ERROR;
    if (w.print) {
        config_print(cfg, out);
        return CONFIG_EXIT;
    }
    return CONFIG_OK;
}

int config_start(config *cfg, const char *program, int argc, char **argv)
{
    char err[CONFIG_ERRLEN * 2];
    config_init(cfg);
    config_result cr = config_load(cfg, program, argc, argv, stdout, err, sizeof(err));
    if (cr == CONFIG_OK)
        return -1;
    if (cr == CONFIG_ERROR)
        fprintf(stderr, "%s: %s\n", program, err);
    config_free(cfg);
    return cr == CONFIG_EXIT ? 0 : 2;
}
