/* unit_openapi.c: docs/openapi.yaml and the router know the same routes:
 * every (method, path) the server answers is in the spec, and every one the
 * spec describes is answered. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "router.h"

#define MAX_ROUTES 64

typedef struct route_key {
    char method[8];
    char path[128];
} route_key;

/* "/a/{id}/b" and "/a/{}/b" alike: every {...} becomes {}. */
static void normalize(const char *in, char *out, size_t cap)
{
    size_t j = 0;
    for (size_t i = 0; in[i] && j + 3 < cap; i++) {
        if (in[i] == '{') {
            out[j++] = '{';
            out[j++] = '}';
            while (in[i] && in[i] != '}')
                i++;
            continue;
        }
        out[j++] = in[i];
    }
    out[j] = '\0';
}

/* The spec's (method, path) pairs: paths at two spaces of indent under
 * "paths:", methods at four. */
static size_t spec_routes(route_key *keys)
{
    char file[512], line[1024], path[128] = "";
    snprintf(file, sizeof(file), "%s/docs/openapi.yaml", SECKILL_SOURCE_DIR);
    FILE *f = fopen(file, "r");
    cr_assert_not_null(f, "cannot open %s", file);
    size_t n = 0;
    int in_paths = 0;
    while (fgets(line, sizeof(line), f)) {
        if (strncmp(line, "paths:", 6) == 0) {
            in_paths = 1;
            continue;
        }
        if (in_paths && line[0] != ' ' && line[0] != '\n')
            break;
        if (!in_paths)
            continue;
        if (strncmp(line, "  /", 3) == 0) {
            char *colon = strrchr(line, ':');
            *colon = '\0';
            normalize(line + 2, path, sizeof(path));
        } else {
            static const char *methods[] = {"get", "post", "put", "delete", "patch"};
            for (size_t m = 0; m < 5; m++) {
                char want[16];
                snprintf(want, sizeof(want), "    %s:", methods[m]);
                if (strncmp(line, want, strlen(want)) == 0) {
                    cr_assert_lt(n, MAX_ROUTES);
                    for (size_t k = 0; methods[m][k]; k++)
                        keys[n].method[k] = (char)(methods[m][k] - 'a' + 'A');
                    keys[n].method[strlen(methods[m])] = '\0';
                    snprintf(keys[n].path, sizeof(keys[n].path), "%s", path);
                    n++;
                }
            }
        }
    }
    fclose(f);
    return n;
}

static int contains(const route_key *keys, size_t n, const char *method, const char *path)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(keys[i].method, method) == 0 && strcmp(keys[i].path, path) == 0)
            return 1;
    return 0;
}

Test(openapi, every_route_of_the_server_is_in_the_spec)
{
    route_key spec[MAX_ROUTES];
    size_t n = spec_routes(spec);
    cr_assert_gt(n, 10, "the spec parsed to %zu routes", n);
    for (size_t i = 0; i < router_count(); i++) {
        const char *method, *pattern;
        char path[128];
        router_at(i, &method, &pattern);
        normalize(pattern, path, sizeof(path));
        cr_expect(contains(spec, n, method, path), "%s %s is missing from docs/openapi.yaml",
                  method, pattern);
    }
}

Test(openapi, every_route_of_the_spec_is_answered_by_the_server)
{
    route_key spec[MAX_ROUTES];
    size_t n = spec_routes(spec);
    route_key server[MAX_ROUTES];
    size_t m = 0;
    for (size_t i = 0; i < router_count() && m < MAX_ROUTES; i++, m++) {
        const char *method, *pattern;
        router_at(i, &method, &pattern);
        snprintf(server[m].method, sizeof(server[m].method), "%s", method);
        normalize(pattern, server[m].path, sizeof(server[m].path));
    }
    for (size_t i = 0; i < n; i++)
        cr_expect(contains(server, m, spec[i].method, spec[i].path),
                  "docs/openapi.yaml describes %s %s, which the router does not know",
                  spec[i].method, spec[i].path);
}
