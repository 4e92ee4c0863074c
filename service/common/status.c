/* status.c: the only place where a product outcome becomes an HTTP status,
 * a code and the message a client reads when nothing more specific is said
 * (the laboratory's own: lab_status.c). */
#include "status.h"

static const struct {
    int http;
    const char *code;
    const char *message;
} table[SK_STATUS_COUNT] = {
    [SK_OK] = {200, "ok", "ok"},
    [SK_QUEUED] = {202, "queued", "the order is queued"},
    [SK_CREATED] = {201, "created", "created"},
    [SK_SOLD_OUT] = {409, "sold_out", "the item is sold out"},
    [SK_LIMIT_REACHED] = {409, "limit_reached",
                          "this buyer has bought as many units as the item allows"},
    [SK_INSUFFICIENT_STOCK] = {409, "insufficient_stock",
                               "fewer units remain than the quantity asked for"},
    [SK_NOT_STARTED] = {409, "not_started", "the sale has not started yet"},
    [SK_ENDED] = {409, "ended", "the sale has ended"},
    [SK_NOT_FOUND] = {404, "not_found", "not found"},
    [SK_ITEM_EXISTS] = {409, "item_exists", "an item with this id exists"},
    [SK_INVALID] = {400, "invalid_request", "invalid request"},
    [SK_UNAUTHORIZED] = {401, "unauthorized", "admin token missing or wrong"},
    [SK_METHOD_NOT_ALLOWED] = {405, "method_not_allowed", "method not allowed on this path"},
    [SK_TOO_LARGE] = {413, "payload_too_large", "request body too large"},
    [SK_BACKEND_DOWN] = {503, "backend_unavailable",
                         "Redis, PostgreSQL or a lock server is unavailable; try again"},
    [SK_QUEUE_FULL] = {503, "queue_full", "too many orders wait for the database; try again"},
    [SK_INTERNAL] = {500, "internal_error", "internal error"},
    [SK_RATE_LIMITED] = {429, "rate_limited", "too many purchases by this buyer; slow down"},
    [SK_FORBIDDEN] = {403, "forbidden", "a buyer may act only for themselves"},
    [SK_ORDER_PAID] = {409, "paid", "the order is paid; it can no longer be cancelled"},
    [SK_ORDER_CANCELLED] = {409, "cancelled",
                            "the order was cancelled; its units went back on sale"},
    [SK_ORDER_EXPIRED] = {409, "expired",
                          "the order was not paid in time; its units went back on sale"},
    [SK_ORDER_FINAL] = {409, "final",
                        "the item has no payment step: its orders are final once persisted"},
    [SK_UNCONFIRMED] = {503, "unconfirmed",
                        "the reservation may have been made but was not confirmed (no Redis "
                        "replica held it in time, or the connection to Redis was lost before its "
                        "answer); the order may still go through: read it by its order_id"},
    [SK_ARCHIVED] = {409, "archived",
                     "the item is archived: it is off sale for good and cannot be reset or "
                     "restocked; its orders stay readable"},
    [SK_BUYER_REQUIRED] = {409, "buyer_required",
                           "this item's per-buyer limit is below its stock: a purchase must name "
                           "its buyer (user_id or a buyer token), or one person could buy past "
                           "the limit anonymously"},
    [SK_IN_PROGRESS] = {429, "in_progress",
                        "your previous order of this item is still being created; try again "
                        "in a moment"},
    [SK_ADMISSION_MISSING] = {403, "admission_missing",
                              "this item sells through its waiting room: the purchase needs the "
                              "admission token (X-Admission header or \"admission\" in the body)"},
    [SK_ADMISSION_FORGED] = {403, "admission_forged", "the admission token is not one of ours"},
    [SK_ADMISSION_EXPIRED] = {403, "admission_expired",
                              "the admission window is over: this admission buys nothing more"},
    [SK_ADMISSION_WRONG_BUYER] = {403, "admission_wrong_buyer",
                                  "the admission token is another buyer's"},
    [SK_ADMISSION_WRONG_ITEM] = {403, "admission_wrong_item",
                                 "the admission token is for another item"},
    [SK_ADMISSION_WRONG_ROUND] = {403, "admission_wrong_round",
                                  "the admission token is for another round of this item"},
    [SK_NOT_A_ROOM] = {409, "not_a_room",
                       "this item has no waiting room: it sells to whoever buys first "
                       "(admission race)"},
    [SK_NOT_IN_QUEUE] = {404, "not_in_queue",
                         "this buyer has not joined the item's queue: POST to join it"},
    [SK_POW_MISSING] = {403, "pow_missing",
                        "this item asks a proof-of-work: solve GET /api/v1/items/{id}/challenge "
                        "and send the solution as \"altcha\" in the body"},
    [SK_POW_MALFORMED] = {403, "pow_malformed",
                          "altcha is not a solution: the base64 of ALTCHA's JSON payload"},
    [SK_POW_FORGED] = {403, "pow_forged", "the challenge of this solution is not one of ours"},
    [SK_POW_WRONG_NUMBER] = {403, "pow_wrong_number",
                             "the number does not solve the challenge (or the salt was changed)"},
    [SK_POW_EXPIRED] = {403, "pow_expired", "the challenge has expired: ask for a new one"},
    [SK_POW_WRONG_ITEM] = {403, "pow_wrong_item", "the challenge is another item's"},
    [SK_POW_WRONG_BUYER] = {403, "pow_wrong_buyer", "the challenge is another buyer's"},
    [SK_POW_REPLAYED] = {403, "pow_replayed",
                         "this solution was used already: each enters once; ask for a new "
                         "challenge"},
    [SK_POW_OFF] = {409, "pow_not_required",
                    "this item asks no proof-of-work: join or enter without one"},
    [SK_DRAW_ITEM] = {409, "draw_item",
                      "this item is sold by a draw: enter it (POST /api/v1/items/{id}/entries) "
                      "while its entries are open; winners get an order"},
    [SK_NOT_A_DRAW] = {409, "not_a_draw",
                       "this item is not sold by a draw (its admission is race or room)"},
    [SK_ENTRIES_NOT_OPEN] = {409, "entries_not_open",
                             "the draw's entries are not open yet: they open at entries_open_at"},
    [SK_ENTRIES_CLOSED] = {409, "entries_closed",
                           "the draw's entries are closed (at entries_close_at, or drawn)"},
    [SK_NOT_ENTERED] = {404, "not_entered", "this buyer has not entered this round's draw"},
    [SK_ENTRIES_OPEN] = {409, "entries_open",
                         "the entries are still open: the draw runs after entries_close_at"},
    [SK_NOT_DRAWN] = {409, "not_drawn",
                      "the draw has not run yet: its order is published when it has"},
    [SK_LAB_OFF] = {404, "lab_off",
                    "the oversell laboratory is off on this server (lab = on turns it on; never "
                    "on a production server)"},
};

int sk_status_http(sk_status s)
{
    return (unsigned)s < SK_STATUS_COUNT ? table[s].http : 500;
}

const char *sk_status_code(sk_status s)
{
    return (unsigned)s < SK_STATUS_COUNT ? table[s].code : "internal_error";
}

const char *sk_status_message(sk_status s)
{
    return (unsigned)s < SK_STATUS_COUNT ? table[s].message : "internal error";
}
