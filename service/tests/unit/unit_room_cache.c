/* unit_room_cache.c: what an instance remembers of its waiting rooms
 * (room_cache.h): every buyer of a line of 5,000 answered from memory
 * with their own place and entrant handle, a place of another round never
 * answered, and the poll counts as /metrics shows them. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "room_cache.h"
#include "room_order.h"

enum { BUYERS = 5000 };

static const int64_t item = 42, round_no = 3;

static room_cache *with_room(void)
{
    room_cache *c = room_cache_create();
    cr_assert_not_null(c);
    room_info info = {.item = item, .round = round_no, .starts_ms = 1000, .per_s = 1};
    room_cache_set_info(c, &info);
    room_frontier f = {round_no, 0, BUYERS, 0, 2000, 0};
    room_cache_set_frontier(c, item, &f);
    return c;
}

/* The buyers as loadtest/room.lua names them: 2^62 and more. */
static int64_t buyer(int i)
{
    return (4611686019LL + i % 2) * 1000000000LL + 2 + i / 2;
}

Test(room_cache, every_buyer_of_a_line_of_5000_is_answered_from_memory_with_their_handle)
{
    room_cache *c = with_room();
    char e[ROOM_HEX_LEN + 1];
    for (int i = 0; i < BUYERS; i++) {
        cr_assert_eq(room_entrant(item, round_no, buyer(i), e), 0);
        room_cache_set_place(c, item, round_no, buyer(i), i + 1, e);
    }
    int lost = 0;
    for (int i = 0; i < BUYERS; i++) {
        room_info info;
        room_frontier f;
        room_place p;
        if (!room_cache_waiting(c, item, buyer(i), 100, &info, &p, &f)) {
            lost++;
            continue;
        }
        cr_assert_eq(p.place, i + 1);
        cr_assert_eq(room_entrant(item, round_no, buyer(i), e), 0);
        cr_assert_str_eq(p.entrant, e);
        cr_assert_eq(info.round, round_no);
    }
    /* Direct-mapped, buyers whose hashes met pushed each other out (some
     * 58 of these 5,000 in 262,144 slots). */
    cr_assert_eq(lost, 0, "%d of %d buyers not remembered", lost, BUYERS);
    room_cache_free(c);
}

Test(room_cache, a_place_of_another_round_or_item_is_not_answered)
{
    room_cache *c = with_room();
    char e[ROOM_HEX_LEN + 1];
    cr_assert_eq(room_entrant(item, round_no - 1, 7, e), 0);
    room_cache_set_place(c, item, round_no - 1, 7, 1, e);
    room_cache_set_place(c, item + 1, round_no, 8, 1, e);
    room_cache_set_place(c, item, round_no, 9, 1, "not hex");
    room_info info;
    room_frontier f;
    room_place p;
    cr_assert_eq(room_cache_waiting(c, item, 7, 100, &info, &p, &f), 0);
    cr_assert_eq(room_cache_waiting(c, item, 8, 100, &info, &p, &f), 0);
    cr_assert_eq(room_cache_waiting(c, item, 9, 100, &info, &p, &f), 0);
    room_cache_free(c);
}

Test(room_cache, polls_are_counted_by_where_they_were_answered)
{
    room_cache *c = room_cache_create();
    for (int i = 0; i < 3; i++)
        room_cache_count_poll(c, 1);
    room_cache_count_poll(c, 0);
    char *text = room_cache_metrics(c);
    cr_assert_not_null(text);
    cr_assert_not_null(strstr(text, "# TYPE seckill_room_polls_total counter\n"));
    cr_assert_not_null(strstr(text, "seckill_room_polls_total{answered=\"memory\"} 3\n"), "%s",
                       text);
    cr_assert_not_null(strstr(text, "seckill_room_polls_total{answered=\"pool\"} 1\n"), "%s", text);
    free(text);
    room_cache_free(c);
}
