/* web.c: URL path -> embedded page or asset, and the one file read from disk
 * (the lab's results, which `make experiments` rewrites while we run). */
#include "web.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct {
    const char *ext;
    const char *type;
} types[] = {
    {".html", "text/html; charset=utf-8"},
    {".js", "text/javascript; charset=utf-8"},
    {".css", "text/css; charset=utf-8"},
    {".json", "application/json"},
    {".svg", "image/svg+xml"},
    {".png", "image/png"},
    {".ico", "image/x-icon"},
};

const char *web_content_type(const char *name)
{
    size_t n = strlen(name);
    for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
        size_t e = strlen(types[i].ext);
        if (n >= e && strcmp(name + n - e, types[i].ext) == 0)
            return types[i].type;
    }
    return "application/octet-stream";
}

/* The file a URL path stands for, or NULL. Only "/", "/lab", "/admin" and names under
 * "/static/" map: a path never walks the embedded table freely. */
static const char *file_of(const char *path)
{
    static const char prefix[] = "/static/";
    if (strcmp(path, "/") == 0)
        return "index.html";
    if (strcmp(path, "/lab") == 0)
        return "lab.html";
    if (strcmp(path, "/admin") == 0)
        return "admin.html";
    if (strncmp(path, prefix, sizeof(prefix) - 1) == 0)
        return path + 1;
    return NULL;
}

int web_find(const char *path, const char **body, size_t *len, const char **content_type)
{
    const char *name = file_of(path);
    if (!name)
        return -1;
    for (const web_file *f = web_embedded; f->path; f++) {
        if (strcmp(f->path, name) == 0) {
            *body = (const char *)f->data;
            *len = f->len;
            *content_type = web_content_type(name);
            return 0;
        }
    }
    return -1;
}

char *web_read_file(const char *path, size_t max, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *buf = NULL;
    long size;
    if (fseek(f, 0, SEEK_END) != 0 || (size = ftell(f)) < 0 || (size_t)size > max ||
        fseek(f, 0, SEEK_SET) != 0)
        goto fail;
    buf = malloc((size_t)size + 1);
    if (!buf || fread(buf, 1, (size_t)size, f) != (size_t)size)
        goto fail;
    buf[size] = '\0';
    *len = (size_t)size;
    fclose(f);
    return buf;
fail:
    free(buf);
    fclose(f);
    return NULL;
}
