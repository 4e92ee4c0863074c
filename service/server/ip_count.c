/* ip_count.c: a chained hash of addresses to connection counts under one
 * mutex. Taken once per accepted connection and given back once at its close,
 * so the lock is held for a few instructions per connection, never per
 * request. An address whose count falls to 0 leaves the table: its size
 * follows the clients connected now, not every client ever seen. */
#include "ip_count.h"

#include <netinet/in.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define IP_COUNT_BUCKETS 4096u /* a power of two */

typedef struct ip_key {
    uint8_t family; /* AF_INET or AF_INET6 */
    uint8_t addr[16];
} ip_key;

typedef struct ip_node {
    ip_key key;
    unsigned count;
    struct ip_node *next;
} ip_node;

struct ip_count {
    unsigned limit;
    pthread_mutex_t lock;
    ip_node *buckets[IP_COUNT_BUCKETS];
};

/* The address without its port. Returns 0 for families that are not
 * counted. */
static int key_of(const struct sockaddr *addr, socklen_t len, ip_key *k)
{
    memset(k, 0, sizeof(*k));
    if (addr->sa_family == AF_INET && len >= (socklen_t)sizeof(struct sockaddr_in)) {
        k->family = AF_INET;
        memcpy(k->addr, &((const struct sockaddr_in *)addr)->sin_addr, 4);
        return 1;
    }
    if (addr->sa_family == AF_INET6 && len >= (socklen_t)sizeof(struct sockaddr_in6)) {
        k->family = AF_INET6;
        memcpy(k->addr, &((const struct sockaddr_in6 *)addr)->sin6_addr, 16);
        return 1;
    }
    return 0;
}

/* FNV-1a over the key's bytes. */
static unsigned bucket_of(const ip_key *k)
{
    uint32_t h = 2166136261u;
    const uint8_t *p = (const uint8_t *)k;
    for (size_t i = 0; i < sizeof(*k); i++)
        h = (h ^ p[i]) * 16777619u;
    return h & (IP_COUNT_BUCKETS - 1);
}

/* The link that points at k's node, or at the NULL that ends its chain. */
static ip_node **find(ip_count *c, const ip_key *k)
{
    ip_node **link = &c->buckets[bucket_of(k)];
    while (*link && memcmp(&(*link)->key, k, sizeof(*k)) != 0)
        link = &(*link)->next;
    return link;
}

ip_count *ip_count_create(unsigned limit)
{
    ip_count *c = calloc(1, sizeof(*c));
    if (!c)
        return NULL;
    c->limit = limit;
    pthread_mutex_init(&c->lock, NULL);
    return c;
}

int ip_count_take(ip_count *c, const struct sockaddr *addr, socklen_t len)
{
    ip_key k;
    if (!key_of(addr, len, &k))
        return 1;
    int taken = 0;
    pthread_mutex_lock(&c->lock);
    ip_node **link = find(c, &k);
    if (!*link) {
        ip_node *n = calloc(1, sizeof(*n));
        if (n) {
            n->key = k;
            *link = n;
        }
    }
    if (*link && (*link)->count < c->limit) {
        (*link)->count++;
        taken = 1;
    }
    pthread_mutex_unlock(&c->lock);
    return taken;
}

void ip_count_give(ip_count *c, const struct sockaddr *addr, socklen_t len)
{
    ip_key k;
    if (!key_of(addr, len, &k))
        return;
    pthread_mutex_lock(&c->lock);
    ip_node **link = find(c, &k);
    ip_node *n = *link;
    if (n && n->count > 0 && --n->count == 0) {
        *link = n->next;
        free(n);
    }
    pthread_mutex_unlock(&c->lock);
}

unsigned ip_count_of(ip_count *c, const struct sockaddr *addr, socklen_t len)
{
    ip_key k;
    if (!key_of(addr, len, &k))
        return 0;
    pthread_mutex_lock(&c->lock);
    ip_node *n = *find(c, &k);
    unsigned count = n ? n->count : 0;
    pthread_mutex_unlock(&c->lock);
    return count;
}

void ip_count_free(ip_count *c)
{
    if (!c)
        return;
    for (unsigned i = 0; i < IP_COUNT_BUCKETS; i++) {
        ip_node *n = c->buckets[i];
        while (n) {
            ip_node *next = n->next;
            free(n);
            n = next;
        }
    }
    pthread_mutex_destroy(&c->lock);
    free(c);
}
