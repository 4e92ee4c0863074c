/* order_row.c: an order's row of PostgreSQL read into an order_record. */
#include "order_row.h"

#include <stdlib.h>
#include <string.h>

int64_t order_row_int(const PGresult *res, int row, int col)
{
    return strtoll(PQgetvalue(res, row, col), NULL, 10);
}

void order_row_read(const PGresult *res, int row, order_record *r, int *overdue)
{
    memset(r, 0, sizeof(*r));
    r->o.id = order_row_int(res, row, 0);
    r->o.item_id = order_row_int(res, row, 1);
    r->o.user_id = order_row_int(res, row, 2);
    r->o.round = order_row_int(res, row, 3);
    r->o.created_ms = order_row_int(res, row, 4);
    r->o.quantity = (int)order_row_int(res, row, 5);
    r->o.first_unit = order_row_int(res, row, 6);
    if (order_state_named(PQgetvalue(res, row, 7), &r->state) < 0)
        r->state = ORDER_PERSISTED;
    r->pay_by_ms = order_row_int(res, row, 8);
    r->paid_ms = order_row_int(res, row, 9);
    r->ended_ms = order_row_int(res, row, 10);
    r->returned = PQgetvalue(res, row, 11)[0] == 't';
    if (overdue)
        *overdue = PQgetvalue(res, row, 12)[0] == 't';
    r->o.segment_id = order_row_int(res, row, 13);
    r->o.home_id = order_row_int(res, row, 14);
    r->round_over = PQgetvalue(res, row, 15)[0] == 't';
}
