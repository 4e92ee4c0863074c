/* unit_text_buf.c: a text built printf-style (text_buf.c): pieces end to
 * end, growth past the first room keeping them, the empty text, and a lost
 * write that loses the whole text. */
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

#include <criterion/criterion.h>

#include "text_buf.h"

Test(text_buf, pieces_are_written_end_to_end)
{
    text_buf t = TEXT_BUF_INIT;
    text_buf_printf(&t, "# TYPE %s gauge\n", "seckill_x");
    text_buf_printf(&t, "seckill_x{item=\"%d\"} %ld\n", 7, 42L);
    cr_assert_eq(t.len, strlen(t.s));
    char *s = text_buf_take(&t);
    cr_assert_str_eq(s, "# TYPE seckill_x gauge\nseckill_x{item=\"7\"} 42\n");
    cr_assert_null(t.s, "taking leaves the buffer empty");
    cr_assert_eq(t.len, 0);
    free(s);
}

Test(text_buf, a_text_larger_than_the_first_room_grows_and_keeps_what_was_written)
{
    text_buf t = TEXT_BUF_INIT;
    char line[1000];
    memset(line, 'a', sizeof(line) - 1);
    line[sizeof(line) - 1] = '\0';
    size_t lines = 3 * TEXT_BUF_FIRST / (sizeof(line) - 1) + 1;
    for (size_t i = 0; i < lines; i++) {
        line[0] = (char)('0' + i % 10);
        text_buf_printf(&t, "%s\n", line);
    }
    cr_assert(t.cap > TEXT_BUF_FIRST);
    char *s = text_buf_take(&t);
    cr_assert_not_null(s);
    cr_assert_eq(strlen(s), lines * sizeof(line));
    for (size_t i = 0; i < lines; i++) {
        cr_assert_eq(s[i * sizeof(line)], '0' + i % 10);
        cr_assert_eq(s[i * sizeof(line) + sizeof(line) - 1], '\n');
    }
    free(s);
}

Test(text_buf, nothing_written_is_the_empty_text)
{
    text_buf t = TEXT_BUF_INIT;
    char *s = text_buf_take(&t);
    cr_assert_str_eq(s, "");
    free(s);
}

Test(text_buf, a_lost_write_loses_the_text_and_later_writes_are_ignored)
{
    text_buf t = TEXT_BUF_INIT;
    text_buf_printf(&t, "before\n");
    /* In the C locale a wide character outside ASCII has no multibyte
     * form: vsnprintf fails, as it would for want of memory. */
    static const wchar_t wide[] = {0x20AC, 0};
    text_buf_printf(&t, "%ls\n", wide);
    cr_assert(t.failed);
    text_buf_printf(&t, "after\n");
    cr_assert_eq(t.len, strlen("before\n"), "nothing written after the loss");
    cr_assert_null(text_buf_take(&t));
    cr_assert_null(t.s, "the lost text is freed");
}
