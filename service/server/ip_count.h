/* ip_count.h: open connections per client address, bounded (the per-IP
 * connection limit), shared by every HTTP loop of the server. */
#ifndef SECKILL_IP_COUNT_H
#define SECKILL_IP_COUNT_H

#include <sys/socket.h>

typedef struct ip_count ip_count;

/* A table that admits at most limit (> 0) connections per address. Returns
 * NULL when out of memory. */
ip_count *ip_count_create(unsigned limit);

/* Counts one more connection from addr. Returns 1 when it fits under the
 * limit (and was counted), 0 when the address is at its limit or out of
 * memory (not counted). Addresses other than IPv4 and IPv6 always fit and
 * are not counted. Any thread. */
int ip_count_take(ip_count *c, const struct sockaddr *addr, socklen_t len);

/* Gives back one connection taken by ip_count_take() for addr. */
void ip_count_give(ip_count *c, const struct sockaddr *addr, socklen_t len);

/* How many connections addr holds now. */
unsigned ip_count_of(ip_count *c, const struct sockaddr *addr, socklen_t len);

/* NULL is a no-op. */
void ip_count_free(ip_count *c);

#endif
