/* unit_metrics.c: counters count, the histogram is cumulative, the text is
 * in the Prometheus exposition format. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "metrics.h"
#include "gate.h"
#include "keys.h"

static const char *names[] = {"health", "purchase"};

static char *render(metrics *m)
{
    metrics_gauges g = {.soldout_flags = 2, .queue = 5, .processing = -1, .pending = 7, .dead = 0};
    char *text = metrics_render(m, &g);
    cr_assert_not_null(text);
    return text;
}

Test(metrics, requests_are_counted_by_route_and_status)
{
    metrics *m = metrics_create(names, 2);
    metrics_request(m, 1, 202, 0.001);
    metrics_request(m, 1, 202, 0.002);
    metrics_request(m, 1, 409, 0.0001);
    metrics_request(m, 0, 200, 0.0001);
    metrics_request(m, 7, 200, 0.1); /* no such route: ignored */
    char *t = render(m);
    cr_expect(strstr(t, "seckill_http_requests_total{route=\"purchase\",code=\"202\"} 2\n"), "%s",
              t);
    cr_expect(strstr(t, "seckill_http_requests_total{route=\"purchase\",code=\"409\"} 1\n"), "%s",
              t);
    cr_expect(strstr(t, "seckill_http_requests_total{route=\"health\",code=\"200\"} 1\n"), "%s", t);
    cr_expect_null(strstr(t, "code=\"500\""), "no sample for a status never seen");
    free(t);
    metrics_free(m);
}

Test(metrics, the_latency_histogram_is_cumulative_and_ends_in_inf)
{
    metrics *m = metrics_create(names, 2);
    metrics_request(m, 1, 202, 0.0004); /* <= 0.0005 */
    metrics_request(m, 1, 202, 0.003);  /* <= 0.005 */
    metrics_request(m, 1, 202, 10);     /* +Inf only */
    char *t = render(m);
    cr_expect(strstr(t, "_bucket{route=\"purchase\",le=\"0.0005\"} 1\n"), "%s", t);
    cr_expect(strstr(t, "_bucket{route=\"purchase\",le=\"0.0025\"} 1\n"), "%s", t);
    cr_expect(strstr(t, "_bucket{route=\"purchase\",le=\"0.005\"} 2\n"), "%s", t);
    cr_expect(strstr(t, "_bucket{route=\"purchase\",le=\"2.5\"} 2\n"), "%s", t);
    cr_expect(strstr(t, "_bucket{route=\"purchase\",le=\"+Inf\"} 3\n"), "%s", t);
    cr_expect(strstr(t, "seckill_http_request_duration_seconds_count{route=\"purchase\"} 3\n"),
              "%s", t);
    cr_expect(
        strstr(t, "seckill_http_request_duration_seconds_sum{route=\"purchase\"} 10.003400\n"),
        "%s", t);
    free(t);
    metrics_free(m);
}

Test(metrics, outcomes_errors_and_gauges_are_exposed_with_help_and_type)
{
    metrics *m = metrics_create(names, 2);
    metrics_purchase(m, METRICS_SOLD_OUT_FLAG);
    metrics_purchase(m, METRICS_SOLD_OUT_FLAG);
    metrics_backend_error(m, METRICS_POSTGRESQL);
    char *t = render(m);
    cr_expect(strstr(t, "seckill_purchases_total{outcome=\"sold_out_flag\"} 2\n"), "%s", t);
    cr_expect(strstr(t, "seckill_purchases_total{outcome=\"queued\"} 0\n"), "%s", t);
    cr_expect(strstr(t, "seckill_backend_errors_total{backend=\"postgresql\"} 1\n"), "%s", t);
    cr_expect(strstr(t, "# TYPE seckill_queue_orders gauge\nseckill_queue_orders 5\n"), "%s", t);
    cr_expect(strstr(t, "seckill_soldout_flags 2\n"), "%s", t);
    cr_expect_null(strstr(t, "seckill_processing_orders "), "an unknown gauge has no sample");
    /* Every sample line belongs to a family announced by # TYPE. */
    for (char *line = strtok(t, "\n"); line; line = strtok(NULL, "\n"))
        cr_expect(line[0] == '#' || strncmp(line, "seckill_", 8) == 0, "stray line: %s", line);
    free(t);
    metrics_free(m);
}

Test(metrics, soldout_count_counts_the_flags_of_live_rounds)
{
    gate *s = gate_create(16);
    gate_set_sold_out(s, 1, 3);
    gate_set_sold_out(s, 2, 3);
    gate_new_version(s, 2, 4);
    cr_assert_eq(gate_sold_out_count(s), 1);
    gate_free(s);
}

Test(metrics, soldout_count_counts_a_split_item_once_every_segment_is_flagged)
{
    gate *s = gate_create(16);
    gate_set_segments(s, 10, 3);
    gate_set_sold_out(s, keys_segment(10, 0, 3), 2);
    gate_set_sold_out(s, keys_segment(10, 2, 3), 2);
    cr_assert_eq(gate_sold_out_count(s), 0, "segment 1 still sells");
    gate_set_sold_out(s, keys_segment(10, 1, 3), 2);
    cr_assert_eq(gate_sold_out_count(s), 1, "one item, not three segments");
    gate_free(s);
}

Test(metrics, a_text_longer_than_its_first_room_is_rendered_whole)
{
    /* Forty routes with latencies: far past the text's first 8 KiB. */
    enum { NROUTES = 40 };
    char name_text[NROUTES][16];
    const char *many[NROUTES];
    for (int i = 0; i < NROUTES; i++) {
        snprintf(name_text[i], sizeof(name_text[i]), "route%02d", i);
        many[i] = name_text[i];
    }
    metrics *m = metrics_create(many, NROUTES);
    for (int i = 0; i < NROUTES; i++)
        metrics_request(m, i, 200, 0.001);
    char *t = render(m);
    cr_assert_gt(strlen(t), 8192);
    cr_expect(strstr(t, "seckill_http_requests_total{route=\"route39\",code=\"200\"} 1\n"), "%s",
              t);
    cr_expect(strstr(t, "seckill_dead_letter_orders 0\n"), "the text goes on to its last line");
    free(t);
    metrics_free(m);
}
