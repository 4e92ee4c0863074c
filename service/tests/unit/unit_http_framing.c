/* unit_http_framing.c: which request framings are refused (RFC 9112), so
 * that no proxy in front can read a request differently than we do. */
#include <string.h>

#include <criterion/criterion.h>

#include "http_framing.h"

/* The problem with a request of these header names, or NULL. */
static const char *problem(const char *version, const char *const *names)
{
    http_framing f = {0};
    for (; *names; names++)
        http_framing_note(&f, *names, strlen(*names));
    return http_framing_problem(&f, version);
}

Test(http_framing, an_ordinary_request_passes)
{
    const char *names[] = {"Host", "Content-Type", "Content-Length", "X-Request-Id", NULL};
    cr_expect_null(problem("HTTP/1.1", names));
    const char *chunked[] = {"host", "transfer-encoding", NULL};
    cr_expect_null(problem("HTTP/1.1", chunked), "names are compared without case");
}

Test(http_framing, two_content_lengths_are_refused)
{
    const char *names[] = {"Host", "Content-Length", "content-length", NULL};
    cr_expect_str_eq(problem("HTTP/1.1", names), "more than one Content-Length header");
}

Test(http_framing, content_length_with_transfer_encoding_is_refused)
{
    const char *names[] = {"Host", "Transfer-Encoding", "Content-Length", NULL};
    cr_expect_str_eq(problem("HTTP/1.1", names), "Content-Length together with Transfer-Encoding");
    const char *two[] = {"Host", "Transfer-Encoding", "Transfer-Encoding", NULL};
    cr_expect_str_eq(problem("HTTP/1.1", two), "more than one Transfer-Encoding header");
}

Test(http_framing, host_is_needed_once_in_http_1_1_and_not_in_1_0)
{
    const char *none[] = {"Accept", NULL};
    cr_expect_str_eq(problem("HTTP/1.1", none), "an HTTP/1.1 request needs a Host header");
    cr_expect_null(problem("HTTP/1.0", none));
    const char *two[] = {"Host", "Host", NULL};
    cr_expect_str_eq(problem("HTTP/1.0", two), "more than one Host header");
}

Test(http_framing, a_header_name_that_is_not_a_token_is_refused)
{
    const char *bad[] = {"Bad Header", "Host:", "X\tY", "", "Caf\xc3\xa9", NULL};
    for (const char *const *b = bad; *b; b++) {
        http_framing f = {0};
        http_framing_note(&f, "Host", 4);
        http_framing_note(&f, *b, strlen(*b));
        cr_expect_not_null(http_framing_problem(&f, "HTTP/1.1"), "'%s' passed", *b);
    }
    http_framing f = {0};
    http_framing_note(&f, "Host", 4);
    http_framing_note(&f, "X-A\0B", 5);
    cr_expect_not_null(http_framing_problem(&f, "HTTP/1.1"), "a NUL inside a name passed");
    const char *good[] = {"Host", "X-Weird!#$%&'*+-.^_`|~09az", NULL};
    cr_expect_null(problem("HTTP/1.1", good));
}
