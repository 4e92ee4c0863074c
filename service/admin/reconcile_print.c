/* reconcile_print.c: the report of reconcile_scan, as a table for a human
 * or as JSON for a script, with each item's verdict. */
#include "reconcile.h"

#include <inttypes.h>

#include <jansson.h>

static const char *verdict(const reconcile_item *it)
{
    if (!it->redis_known)
        return "missing in redis";
    if (it->redis_round != it->round)
        return "round differs";
    if (it->redis_restocked != it->restocked)
        return "restock differs";
    if (it->drift > 0)
        return "units sold without an order";
    if (it->drift < 0)
        return "redis forgot sales: would oversell";
    if (reconcile_item_owes(it))
        return "returns owed by another redis: --rebuild";
    return "ok";
}

void reconcile_print(const reconcile_report *r, int json, FILE *out)
{
    if (json) {
        json_t *items = json_array();
        for (size_t i = 0; i < r->nitems; i++) {
            const reconcile_item *it = &r->items[i];
            json_array_append_new(
                items,
                json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:s, s:I}", "id",
                          (json_int_t)it->id, "round", (json_int_t)it->round, "initial",
                          (json_int_t)it->initial, "restocked", (json_int_t)it->restocked,
                          "remaining", (json_int_t)it->remaining, "held", (json_int_t)it->held,
                          "pending", (json_int_t)it->pending, "owed", (json_int_t)it->owed,
                          "buyers", (json_int_t)it->buyers, "drift", (json_int_t)it->drift,
                          "verdict", verdict(it), "grants_owed", (json_int_t)it->grants_owed));
        }
        json_t *root =
            json_pack("{s:o, s:I, s:I, s:I, s:I, s:I, s:I}", "items", items, "queue",
                      (json_int_t)r->queue, "processing", (json_int_t)r->processing, "pending",
                      (json_int_t)r->pending, "dead", (json_int_t)r->dead, "drifting",
                      (json_int_t)r->drifting, "owing", (json_int_t)r->owing);
        json_dumpf(root, out, JSON_INDENT(2));
        fputc('\n', out);
        json_decref(root);
        return;
    }
    fprintf(out, "%10s %8s %10s %10s %10s %10s %10s %10s %10s %8s  %s\n", "item", "round",
            "initial", "restocked", "remaining", "held", "pending", "owed", "buyers", "drift",
            "verdict");
    for (size_t i = 0; i < r->nitems; i++) {
        const reconcile_item *it = &r->items[i];
        fprintf(out,
                "%10" PRId64 " %8" PRId64 " %10" PRId64 " %10" PRId64 " %10" PRId64 " %10" PRId64
                " %10" PRId64 " %10" PRId64 " %10" PRId64 " %8" PRId64 "  %s\n",
                it->id, it->round, it->initial, it->restocked, it->remaining, it->held, it->pending,
                it->owed, it->buyers, it->drift, verdict(it));
        if (it->grants_owed > 0) /* a draw's (issue 28): the worker's draw chore takes them */
            fprintf(out, "%10s %" PRId64 " unit(s) of draw orders still to be granted\n", "",
                    it->grants_owed);
    }
    fprintf(out,
            "queue %" PRId64 ", processing %" PRId64 ", pending %" PRId64 ", dead %" PRId64
            "; %" PRId64 " item(s) drifting, %" PRId64 " owed returns only a rebuild gives\n",
            r->queue, r->processing, r->pending, r->dead, r->drifting, r->owing);
}
