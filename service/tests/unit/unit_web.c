/* unit_web.c: URL paths -> the embedded pages of web.c, and their types. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "web.h"

static void expect_page(const char *path, const char *type, const char *contains)
{
    const char *body, *ct;
    size_t len;
    cr_assert_eq(web_find(path, &body, &len, &ct), 0, "%s is not served", path);
    cr_assert_str_eq(ct, type, "%s", path);
    cr_assert_gt(len, 0);
    cr_assert_not_null(memmem(body, len, contains, strlen(contains)), "%s lacks %s", path,
                       contains);
}

Test(web, the_sale_page_and_the_lab_are_embedded_html)
{
    expect_page("/", "text/html; charset=utf-8", "/static/app.js");
    expect_page("/lab", "text/html; charset=utf-8", "/static/lab.js");
}

Test(web, the_operators_console_is_embedded_html)
{
    expect_page("/admin", "text/html; charset=utf-8", "/static/admin.js");
    expect_page("/static/admin.js", "text/javascript; charset=utf-8", "sessionStorage");
    expect_page("/static/admin.css", "text/css; charset=utf-8", "@media");
}

Test(web, assets_carry_their_content_type)
{
    expect_page("/static/app.js", "text/javascript; charset=utf-8", "/api/v1/items");
    expect_page("/static/lab.js", "text/javascript; charset=utf-8", "/lab/results.json");
    expect_page("/static/style.css", "text/css; charset=utf-8", "body");
}

Test(web, only_the_page_paths_reach_the_table)
{
    const char *paths[] = {
        "/index.html",   "/lab.html", "/static/", "/static/missing.js", "/static/../index.html",
        "/api/v1/items", "/lab/",     "/admin/",  "/admin.html"};
    for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
        const char *body, *ct;
        size_t len;
        cr_assert_eq(web_find(paths[i], &body, &len, &ct), -1, "%s is served", paths[i]);
    }
}

Test(web, content_types_follow_the_extension)
{
    cr_assert_str_eq(web_content_type("a.svg"), "image/svg+xml");
    cr_assert_str_eq(web_content_type("results.json"), "application/json");
    cr_assert_str_eq(web_content_type("README"), "application/octet-stream");
    cr_assert_str_eq(web_content_type("js"), "application/octet-stream");
}

Test(web, a_file_is_read_whole_or_not_at_all)
{
    char path[] = "/tmp/unit_web_XXXXXX";
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    cr_assert_eq(write(fd, "{\"a\":1}", 7), 7);
    close(fd);
    size_t len = 0;
    char *text = web_read_file(path, 1024, &len);
    cr_assert_str_eq(text, "{\"a\":1}");
    cr_assert_eq(len, 7);
    free(text);
    cr_assert_null(web_read_file(path, 6, &len), "a file over the limit is refused");
    unlink(path);
    cr_assert_null(web_read_file(path, 1024, &len), "a missing file is NULL");
}
