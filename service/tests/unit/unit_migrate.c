/* unit_migrate.c: which file names seckill-admin migrate takes for
 * migrations, without a database. */
#include <criterion/criterion.h>

#include "migrate.h"

Test(migrate, numbered_sql_files_are_migrations)
{
    const char *good[] = {"001_init.sql", "006_segments.sql", "123_a_b_9.sql", "999_x.sql"};
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
        cr_expect(migrate_is_name(good[i]), "%s", good[i]);
}

Test(migrate, anything_else_in_the_folder_is_not)
{
    const char *bad[] = {"001_init.sql~", "01_init.sql",       "001init.sql",   "001_.sql",
                         "001_init.SQL",  "README.md",         "001_in it.sql", "abc_init.sql",
                         ".001_init.sql", "001_init.sql.orig", "001_../x.sql"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        cr_expect_not(migrate_is_name(bad[i]), "%s", bad[i]);
}
