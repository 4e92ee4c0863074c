/* http_framing.c: the checks of http_framing.h, a few comparisons per
 * header of each request. */
#include "http_framing.h"

#include <string.h>
#include <strings.h>

/* RFC 9110's token: the only characters a field name may have. */
static int is_token(const char *s, size_t n)
{
    static const char tchar[] = "!#$%&'*+-.^_`|~";
    if (n == 0)
        return 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        int alnum = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
        if (!alnum && (c == '\0' || !strchr(tchar, c)))
            return 0;
    }
    return 1;
}

void http_framing_note(http_framing *f, const char *name, size_t len)
{
    if (!is_token(name, len))
        f->bad_name = 1;
    else if (strcasecmp(name, "Content-Length") == 0)
        f->content_length++;
    else if (strcasecmp(name, "Transfer-Encoding") == 0)
        f->transfer_encoding++;
    else if (strcasecmp(name, "Host") == 0)
        f->host++;
}

const char *http_framing_problem(const http_framing *f, const char *version)
{
    if (f->bad_name)
        return "a header name is not a token (no spaces or separators)";
    if (f->content_length > 1)
        return "more than one Content-Length header";
    if (f->content_length && f->transfer_encoding)
        return "Content-Length together with Transfer-Encoding";
    if (f->transfer_encoding > 1)
        return "more than one Transfer-Encoding header";
    if (f->host > 1)
        return "more than one Host header";
    if (f->host == 0 && version && strcmp(version, "HTTP/1.1") == 0)
        return "an HTTP/1.1 request needs a Host header";
    return NULL;
}
