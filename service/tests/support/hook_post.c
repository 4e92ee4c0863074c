/* hook_post.c: a test's webhook delivery to a receiver (hook_post.h). */
#include "hook_post.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <criterion/criterion.h>

#include "harness.h"

int hook_post(int port, const char *body, const char *signature, int64_t id)
{
    char req[4096], resp[1024];
    int len =
        snprintf(req, sizeof(req),
                 "POST /hook HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                 "Seckill-Event-Id: %" PRId64 "\r\nSeckill-Signature: %s\r\n"
                 "Content-Length: %zu\r\nConnection: close\r\n\r\n%s",
                 id, signature, strlen(body), body);
    cr_assert(len > 0 && (size_t)len < sizeof(req), "a delivery of %zu bytes", strlen(body));
    cr_assert_gt(harness_raw(port, req, (size_t)len, 5000, resp, sizeof(resp)), 0);
    int status = 0;
    sscanf(resp, "HTTP/1.%*d %d", &status);
    return status;
}
