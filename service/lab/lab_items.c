/* lab_items.c: a direct-mapped table under one mutex: an item has one place
 * (by a hash of its id), and a newcomer takes it from whoever held it, so
 * the table never fills and a loser is only asked again. The epoch, bumped
 * by every forget, keeps an answer read before a new round from being
 * stored after it. */
#include "lab_items.h"

#include <pthread.h>
#include <stdlib.h>

#include "probe_table.h"

typedef struct place {
    int64_t item; /* 0: empty */
    lab_items_kind kind;
} place;

struct lab_items {
    pthread_mutex_t mu;
    uint64_t epoch;
    unsigned mask;
    place *places;
};

lab_items *lab_items_create(unsigned capacity)
{
    unsigned n = probe_table_slots(capacity);
    lab_items *t = calloc(1, sizeof(*t));
    if (!t || !(t->places = calloc(n, sizeof(*t->places)))) {
        free(t);
        return NULL;
    }
    t->mask = n - 1;
    pthread_mutex_init(&t->mu, NULL);
    return t;
}

void lab_items_free(lab_items *t)
{
    if (!t)
        return;
    pthread_mutex_destroy(&t->mu);
    free(t->places);
    free(t);
}

static place *place_of(lab_items *t, int64_t item)
{
    return &t->places[probe_table_hash(item) & t->mask];
}

lab_items_kind lab_items_lookup(lab_items *t, int64_t item, uint64_t *epoch)
{
    pthread_mutex_lock(&t->mu);
    place *p = place_of(t, item);
    lab_items_kind k = p->item == item ? p->kind : LAB_ITEMS_UNKNOWN;
    *epoch = t->epoch;
    pthread_mutex_unlock(&t->mu);
    return k;
}

void lab_items_learn(lab_items *t, int64_t item, int is_lab, uint64_t epoch)
{
    pthread_mutex_lock(&t->mu);
    if (t->epoch == epoch) {
        place *p = place_of(t, item);
        p->item = item;
        p->kind = is_lab ? LAB_ITEMS_LAB : LAB_ITEMS_PRODUCT;
    }
    pthread_mutex_unlock(&t->mu);
}

void lab_items_forget(lab_items *t, int64_t item)
{
    pthread_mutex_lock(&t->mu);
    t->epoch++;
    place *p = place_of(t, item);
    if (p->item == item)
        p->item = 0;
    pthread_mutex_unlock(&t->mu);
}

void lab_items_forget_all(lab_items *t)
{
    pthread_mutex_lock(&t->mu);
    t->epoch++;
    for (unsigned i = 0; i <= t->mask; i++)
        t->places[i].item = 0;
    pthread_mutex_unlock(&t->mu);
}
