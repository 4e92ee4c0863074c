/* unit_ip_count.c: the per-address connection counts behind
 * per_ip_connection_limit. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

#include <criterion/criterion.h>

#include "ip_count.h"

static struct sockaddr_in v4(const char *ip, int port)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    cr_assert_eq(inet_pton(AF_INET, ip, &a.sin_addr), 1);
    return a;
}

#define SA(a) ((const struct sockaddr *)&(a)), sizeof(a)

Test(ip_count, an_address_is_admitted_up_to_the_limit_whatever_its_ports)
{
    ip_count *c = ip_count_create(3);
    cr_assert_not_null(c);
    for (int i = 0; i < 3; i++) {
        struct sockaddr_in a = v4("10.0.0.1", 40000 + i);
        cr_assert_eq(ip_count_take(c, SA(a)), 1, "connection %d", i + 1);
    }
    struct sockaddr_in fourth = v4("10.0.0.1", 50000);
    cr_assert_eq(ip_count_take(c, SA(fourth)), 0);
    cr_assert_eq(ip_count_of(c, SA(fourth)), 3, "a refused connection is not counted");
    ip_count_free(c);
}

Test(ip_count, addresses_are_counted_apart)
{
    ip_count *c = ip_count_create(1);
    struct sockaddr_in a = v4("10.0.0.1", 1), b = v4("10.0.0.2", 1);
    cr_assert_eq(ip_count_take(c, SA(a)), 1);
    cr_assert_eq(ip_count_take(c, SA(b)), 1);
    cr_assert_eq(ip_count_take(c, SA(a)), 0);
    ip_count_free(c);
}

Test(ip_count, a_connection_given_back_makes_room_and_an_empty_address_is_forgotten)
{
    ip_count *c = ip_count_create(2);
    struct sockaddr_in a = v4("192.168.1.9", 1);
    cr_assert_eq(ip_count_take(c, SA(a)), 1);
    cr_assert_eq(ip_count_take(c, SA(a)), 1);
    cr_assert_eq(ip_count_take(c, SA(a)), 0);
    ip_count_give(c, SA(a));
    cr_assert_eq(ip_count_of(c, SA(a)), 1);
    cr_assert_eq(ip_count_take(c, SA(a)), 1);
    ip_count_give(c, SA(a));
    ip_count_give(c, SA(a));
    cr_assert_eq(ip_count_of(c, SA(a)), 0);
    /* Giving back more than was taken does not wrap the count. */
    ip_count_give(c, SA(a));
    cr_assert_eq(ip_count_take(c, SA(a)), 1);
    cr_assert_eq(ip_count_of(c, SA(a)), 1);
    ip_count_free(c);
}

Test(ip_count, ipv6_addresses_count_and_other_families_pass_uncounted)
{
    ip_count *c = ip_count_create(1);
    struct sockaddr_in6 a = {.sin6_family = AF_INET6};
    cr_assert_eq(inet_pton(AF_INET6, "2001:db8::1", &a.sin6_addr), 1);
    cr_assert_eq(ip_count_take(c, SA(a)), 1);
    cr_assert_eq(ip_count_take(c, SA(a)), 0);
    struct sockaddr un = {.sa_family = AF_UNIX};
    cr_assert_eq(ip_count_take(c, &un, sizeof(un)), 1);
    cr_assert_eq(ip_count_take(c, &un, sizeof(un)), 1);
    cr_assert_eq(ip_count_of(c, &un, sizeof(un)), 0);
    ip_count_free(c);
}

Test(ip_count, many_addresses_share_buckets_without_mixing_up)
{
    ip_count *c = ip_count_create(1);
    char ip[32];
    for (int i = 0; i < 20000; i++) {
        snprintf(ip, sizeof(ip), "10.%d.%d.1", i / 256, i % 256);
        struct sockaddr_in a = v4(ip, 1);
        cr_assert_eq(ip_count_take(c, SA(a)), 1, "%s", ip);
    }
    for (int i = 0; i < 20000; i += 7) {
        snprintf(ip, sizeof(ip), "10.%d.%d.1", i / 256, i % 256);
        struct sockaddr_in a = v4(ip, 2);
        cr_assert_eq(ip_count_take(c, SA(a)), 0, "%s", ip);
        ip_count_give(c, SA(a));
        cr_assert_eq(ip_count_of(c, SA(a)), 0, "%s", ip);
    }
    ip_count_free(c);
}
