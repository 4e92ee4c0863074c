/* lab_keys.c: the lab's key names, built in one place. */
#include "lab_keys.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "keys.h"

int lab_keys_stock(char *buf, size_t len, int64_t item, const char *strategy)
{
    return snprintf(buf, len, "{item:%" PRId64 "}:lab:stock:%s", item, strategy);
}

int lab_keys_sold(char *buf, size_t len, int64_t item)
{
    return snprintf(buf, len, "{item:%" PRId64 "}:lab:sold", item);
}

int lab_keys_lock(char *buf, size_t len, int64_t item, const char *strategy)
{
    return snprintf(buf, len, "{item:%" PRId64 "}:lab:lock:%s", item, strategy);
}

int lab_keys_lock_channel(char *buf, size_t len, int64_t item, const char *strategy)
{
    return snprintf(buf, len, "{item:%" PRId64 "}:lab:released:%s", item, strategy);
}

int lab_keys_fence_issued(char *buf, size_t len, int64_t item, const char *strategy)
{
    return snprintf(buf, len, "{item:%" PRId64 "}:lab:fence:issued:%s", item, strategy);
}

int lab_keys_fence_seen(char *buf, size_t len, int64_t item, const char *strategy)
{
    return snprintf(buf, len, "{item:%" PRId64 "}:lab:fence:seen:%s", item, strategy);
}

int lab_keys_race(char *buf, size_t len, int64_t item, const char *strategy)
{
    return snprintf(buf, len, "{item:%" PRId64 "}:lab:race:%s", item, strategy);
}

int lab_keys_segments(char *buf, size_t len, int64_t item)
{
    return snprintf(buf, len, "{item:%" PRId64 "}:lab:seg", item);
}

int lab_keys_segment_lock(char *buf, size_t len, int64_t item, int segment)
{
    return snprintf(buf, len, "{item:%" PRId64 "}:lab:lock:segmented:%d", item, segment);
}

char **lab_keys_all(int64_t item, const char *const *strategies, size_t nstrategies, int nsegments,
                    int *argc)
{
    size_t cap = 1 + 5 * nstrategies + (size_t)nsegments + 2;
    char **argv = calloc(cap, sizeof(*argv));
    int n = 0;
    if (!argv)
        return NULL;
    argv[n++] = strdup("UNLINK");
    for (size_t i = 0; i < nstrategies; i++) {
        const char *name = strategies[i];
        char key[KEYS_MAX];
        lab_keys_stock(key, sizeof(key), item, name);
        argv[n++] = strdup(key);
        lab_keys_lock(key, sizeof(key), item, name);
        argv[n++] = strdup(key);
        lab_keys_fence_issued(key, sizeof(key), item, name);
        argv[n++] = strdup(key);
        lab_keys_fence_seen(key, sizeof(key), item, name);
        argv[n++] = strdup(key);
        lab_keys_race(key, sizeof(key), item, name);
        argv[n++] = strdup(key);
    }
    for (int s = 0; s < nsegments; s++) {
        char key[KEYS_MAX];
        lab_keys_segment_lock(key, sizeof(key), item, s);
        argv[n++] = strdup(key);
    }
    char key[KEYS_MAX];
    lab_keys_sold(key, sizeof(key), item);
    argv[n++] = strdup(key);
    lab_keys_segments(key, sizeof(key), item);
    argv[n++] = strdup(key);
    for (int i = 0; i < n; i++) {
        if (!argv[i]) {
            lab_keys_free_all(argv, n);
            return NULL;
        }
    }
    *argc = n;
    return argv;
}

void lab_keys_free_all(char **argv, int argc)
{
    if (!argv)
        return;
    for (int i = 0; i < argc; i++)
        free(argv[i]);
    free(argv);
}
