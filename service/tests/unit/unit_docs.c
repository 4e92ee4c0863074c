/* unit_docs.c: the files a user reads agree with the code: docs/openapi.yaml
 * and the Dockerfile's label carry CMakeLists.txt's VERSION (version.h), and
 * config/seckill.conf.example holds every key of config_keys.c's table with its
 * default, and no key the table lacks, and names each retired key. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "config.h"
#include "version.h"

#define MAX_KEYS 256

typedef struct setting {
    char key[64];
    char value[512];
} setting;

/* The whole of a file of the source tree; the caller frees it. */
static char *source_file(const char *relative)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/%s", SECKILL_SOURCE_DIR, relative);
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f, "cannot open %s", path);
    char *text = NULL;
    size_t size = 0;
    FILE *out = open_memstream(&text, &size);
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof(buf), f)) > 0)
        fwrite(buf, 1, n, out);
    fclose(f);
    fclose(out);
    return text;
}

/* The value after `prefix` at the start of a line of text, up to the end of
 * the line or a closing '"'; "" when no line starts so. */
static void value_after(const char *text, const char *prefix, char *out, size_t cap)
{
    out[0] = '\0';
    for (const char *line = text; line && *line; line = strchr(line, '\n')) {
        if (*line == '\n')
            line++;
        if (strncmp(line, prefix, strlen(prefix)) == 0) {
            const char *v = line + strlen(prefix);
            snprintf(out, cap, "%.*s", (int)strcspn(v, "\"\n"), v);
            return;
        }
    }
}

/* The "key = value" lines of text (comments and blank lines skipped), trimmed. */
static size_t settings_of(const char *text, setting *out)
{
    size_t n = 0;
    for (const char *line = text; *line;) {
        size_t len = strcspn(line, "\n");
        const char *eq = memchr(line, '=', len);
        if (line[0] != '#' && eq) {
            cr_assert_lt(n, MAX_KEYS);
            const char *k_end = eq, *v = eq + 1, *v_end = line + len;
            while (k_end > line && k_end[-1] == ' ')
                k_end--;
            while (v < v_end && *v == ' ')
                v++;
            while (v_end > v && v_end[-1] == ' ')
                v_end--;
            snprintf(out[n].key, sizeof(out[n].key), "%.*s", (int)(k_end - line), line);
            snprintf(out[n].value, sizeof(out[n].value), "%.*s", (int)(v_end - v), v);
            n++;
        }
        line += len + (line[len] == '\n');
    }
    return n;
}

static const setting *find(const setting *list, size_t n, const char *key)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(list[i].key, key) == 0)
            return &list[i];
    return NULL;
}

/* Every key of the table with its default, as --print-config writes them. */
static size_t table_defaults(setting *out)
{
    config cfg;
    config_init(&cfg);
    char *text = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&text, &size);
    config_print(&cfg, f);
    fclose(f);
    config_free(&cfg);
    size_t n = settings_of(text, out);
    free(text);
    return n;
}

Test(docs, openapi_says_the_version_of_the_binaries)
{
    char *spec = source_file("docs/openapi.yaml");
    char version[64];
    value_after(spec, "  version: ", version, sizeof(version));
    cr_expect_str_eq(version, SECKILL_VERSION,
                     "docs/openapi.yaml says version %s, CMakeLists.txt's project VERSION is %s",
                     version, SECKILL_VERSION);
    free(spec);
}

Test(docs, the_docker_image_label_says_the_version_of_the_binaries)
{
    char *dockerfile = source_file("Dockerfile");
    char version[64];
    value_after(dockerfile, "LABEL org.opencontainers.image.version=\"", version, sizeof(version));
    cr_expect_str_eq(version, SECKILL_VERSION,
                     "the Dockerfile's label says version '%s', CMakeLists.txt's project VERSION "
                     "is %s",
                     version, SECKILL_VERSION);
    free(dockerfile);
}

Test(docs, the_config_example_holds_every_key_of_the_table_with_its_default)
{
    static setting table[MAX_KEYS], example[MAX_KEYS];
    size_t nt = table_defaults(table);
    char *text = source_file("config/seckill.conf.example");
    size_t ne = settings_of(text, example);
    cr_assert_gt(nt, 10, "config_print wrote %zu keys", nt);
    for (size_t i = 0; i < nt; i++) {
        const setting *e = find(example, ne, table[i].key);
        cr_expect_not_null(e, "config/seckill.conf.example lacks the key %s", table[i].key);
        if (!e)
            continue;
        cr_expect_str_eq(e->value, table[i].value,
                         "config/seckill.conf.example sets %s = %s, its default is %s",
                         table[i].key, e->value, table[i].value);
    }
    for (size_t i = 0; i < ne; i++)
        cr_expect_not_null(find(table, nt, example[i].key),
                           "config/seckill.conf.example sets %s, which config.c does not know",
                           example[i].key);
    free(text);
}

Test(docs, the_config_example_loads_as_it_is)
{
    config cfg;
    char err[CONFIG_ERRLEN] = "";
    config_init(&cfg);
    char *text = source_file("config/seckill.conf.example");
    cr_expect_eq(config_parse_text(&cfg, text, "seckill.conf.example", err, sizeof(err)), 0, "%s",
                 err);
    cr_expect_eq(config_check(&cfg, err, sizeof(err)), 0, "%s", err);
    free(text);
    config_free(&cfg);
}

Test(docs, the_config_example_names_the_file_of_the_keys_table)
{
    char *text = source_file("config/seckill.conf.example");
    const char *named = strstr(text, "keys[] table of ");
    cr_assert_not_null(named, "the example no longer says where the keys table is");
    char file[256];
    snprintf(file, sizeof(file), "%.*s", (int)strcspn(named + 16, " .\n"), named + 16);
    char relative[300];
    snprintf(relative, sizeof(relative), "%s.c", file);
    char *table = source_file(relative); /* fails when the file does not exist */
    cr_expect(strstr(table, "const config_key config_keys[]"), "%s holds no config_keys[] table",
              relative);
    free(table);
    free(text);
}

/* A retired key is one the example names in its retired section ("#   name: what took its
 * place"), and never sets. */
Test(docs, the_config_example_names_every_retired_key_and_sets_none)
{
    static setting example[MAX_KEYS];
    char *text = source_file("config/seckill.conf.example");
    size_t ne = settings_of(text, example);
    const char *section = strstr(text, "# --- retired keys");
    cr_assert_not_null(section, "the example has no retired keys section");
    size_t n = 0;
    for (const char *name; (name = config_retired_name(n)) != NULL; n++) {
        char line[128];
        snprintf(line, sizeof(line), "\n#   %s: ", name);
        cr_expect(strstr(section, line), "the example does not name the retired key %s", name);
        cr_expect_null(find(example, ne, name), "the example sets the retired key %s", name);
    }
    cr_assert_gt(n, 0);
    free(text);
}
