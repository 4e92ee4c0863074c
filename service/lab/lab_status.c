/* lab_status.c: the laboratory's outcomes as a client reads them. */
#include "lab_status.h"

static const struct {
    int http;
    const char *code;
    const char *message;
} table[LAB_STATUS_END - SK_STATUS_PART] = {
    [SK_BUSY - SK_STATUS_PART] = {429, "busy",
                                  "the lock was not won within lab_lock_wait_ms; try again"},
    [SK_FENCED - SK_STATUS_PART] = {409, "fenced",
                                    "the lock expired during the work and a newer holder came: "
                                    "nothing was sold"},
    [SK_NOT_CONFIGURED - SK_STATUS_PART] = {503, "not_configured",
                                            "this strategy's servers are not configured "
                                            "(zookeeper_lock: set zookeeper_servers, ZooKeeper's "
                                            "host:port)"},
    [SK_NOT_LAB_ITEM - SK_STATUS_PART] = {409, "not_lab_item",
                                          "the laboratory acts only on items created with "
                                          "\"lab\": true; this one is a product item"},
};

/* Whether st is one of the laboratory's own. */
static int own(sk_status st)
{
    return (int)st >= SK_STATUS_PART && (int)st < LAB_STATUS_END;
}

int lab_status_http(sk_status st)
{
    return own(st) ? table[st - SK_STATUS_PART].http : sk_status_http(st);
}

const char *lab_status_code(sk_status st)
{
    return own(st) ? table[st - SK_STATUS_PART].code : sk_status_code(st);
}

void lab_status_reply(http_exchange *ex, sk_status st, const char *message)
{
    if (!own(st)) {
        http_exchange_reply_error(ex, st, message);
        return;
    }
    http_exchange_reply_error_as(ex, table[st - SK_STATUS_PART].http,
                                 table[st - SK_STATUS_PART].code,
                                 message ? message : table[st - SK_STATUS_PART].message, NULL);
}
