/* unit_room_cache.c: what an instance remembers of its waiting rooms
 * (room_cache.h): every buyer of a line of 5,000 answered from memory
 * (room_places' default) with their own place and entrant handle, a place
 * of another round never answered, a full bucket giving up a place of an
 * older round first, and the poll counts as /metrics shows them. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "room_cache.h"
#include "room_order.h"

enum { BUYERS = 5000, PLACES = 65536 };

static const int64_t item = 42, round_no = 3;

/* The room of `it` at round `r`, started, nobody admitted yet. */
static void room_at(room_cache *c, int64_t it, int64_t r)
{
    room_info info = {.item = it, .round = r, .starts_ms = 1000, .per_s = 1};
    room_cache_set_info(c, &info);
    room_frontier f = {r, 0, BUYERS, 0, 2000, 0};
    room_cache_set_frontier(c, it, &f);
}

static room_cache *with_room(size_t places)
{
    room_cache *c = room_cache_create(places);
    cr_assert_not_null(c);
    room_at(c, item, round_no);
    return c;
}

/* Whether memory answers user's poll of `it` with place `want`. */
static int remembered(room_cache *c, int64_t it, int64_t user, int64_t want)
{
    room_info info;
    room_frontier f;
    room_place p;
    return room_cache_waiting(c, it, user, 100, &info, &p, &f) && p.place == want;
}

/* The buyers as loadtest/room.lua names them: 2^62 and more. */
static int64_t buyer(int i)
{
    return (4611686019LL + i % 2) * 1000000000LL + 2 + i / 2;
}

Test(room_cache, every_buyer_of_a_line_of_5000_is_answered_from_memory_with_their_handle)
{
    room_cache *c = with_room(PLACES);
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
    /* Direct-mapped, buyers whose hashes met pushed each other out. */
    cr_assert_eq(lost, 0, "%d of %d buyers not remembered", lost, BUYERS);
    room_cache_free(c);
}

Test(room_cache, a_place_of_another_round_or_item_is_not_answered)
{
    room_cache *c = with_room(PLACES);
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

/* One bucket (four places): the fifth buyer pushes one out, and a place
 * of a round that is over goes before a place of the current one. */
Test(room_cache, a_full_bucket_gives_up_a_place_of_an_older_round_first)
{
    room_cache *c = with_room(4);
    const int64_t other = item + 1;
    room_at(c, other, 1);
    char e[ROOM_HEX_LEN + 1];
    cr_assert_eq(room_entrant(item, round_no, 1, e), 0);
    room_cache_set_place(c, item, round_no, 1, 1, e);
    room_cache_set_place(c, item, round_no, 2, 2, e);
    room_cache_set_place(c, other, 1, 3, 1, e);
    room_cache_set_place(c, other, 1, 4, 2, e);
    room_at(c, other, 2); /* a reset: other's places are of an older round */
    room_cache_set_place(c, item, round_no, 5, 3, e);
    room_cache_set_place(c, item, round_no, 6, 4, e);
    cr_assert(remembered(c, item, 1, 1));
    cr_assert(remembered(c, item, 2, 2));
    cr_assert(remembered(c, item, 5, 3));
    cr_assert(remembered(c, item, 6, 4));
    /* Full of the current round: the next pushes one out, never two. */
    room_cache_set_place(c, item, round_no, 7, 5, e);
    int kept = 0;
    for (int64_t u = 1; u <= 7; u++)
        kept += remembered(c, item, u, u <= 2 ? u : u - 2);
    cr_assert_eq(kept, 4);
    cr_assert(remembered(c, item, 7, 5));
    room_cache_free(c);
}

Test(room_cache, polls_are_counted_by_where_they_were_answered)
{
    room_cache *c = room_cache_create(PLACES);
    for (int i = 0; i < 3; i++)
        room_cache_count_poll(c, 1);
    room_cache_count_poll(c, 0);
    text_buf t = TEXT_BUF_INIT;
    room_cache_metrics(c, &t);
    char *text = text_buf_take(&t);
    cr_assert_not_null(text);
    cr_assert_not_null(strstr(text, "# TYPE seckill_room_polls_total counter\n"));
    cr_assert_not_null(strstr(text, "seckill_room_polls_total{answered=\"memory\"} 3\n"), "%s",
                       text);
    cr_assert_not_null(strstr(text, "seckill_room_polls_total{answered=\"pool\"} 1\n"), "%s", text);
    free(text);
    room_cache_free(c);
}
