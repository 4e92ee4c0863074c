/* unit_cors.c: the origins of cors_origins: checked at load as browsers
 * write them, and matched exactly. */
#include <string.h>

#include <criterion/criterion.h>

#include "cors.h"

static void refused(const char *list, const char *said)
{
    char why[200] = "";
    cr_assert_eq(cors_check_list(list, why, sizeof(why)), -1, "'%s' accepted", list);
    cr_assert(strstr(why, said), "'%s': %s", list, why);
}

Test(cors, origins_as_browsers_send_them_are_accepted)
{
    char why[200];
    cr_assert_eq(cors_check_list("", why, sizeof(why)), 0, "none by default");
    cr_assert_eq(cors_check_list("https://shop.example", why, sizeof(why)), 0);
    cr_assert_eq(cors_check_list("https://shop.example, http://127.0.0.1:8081", why, sizeof(why)),
                 0, "%s", why);
    cr_assert_eq(
        cors_check_list("http://[::1]:3000,https://m.shop-2.example:8443", why, sizeof(why)), 0,
        "%s", why);
}

Test(cors, anything_else_is_refused_saying_which_entry_and_why)
{
    refused("shop.example", "http:// or https://");
    refused("ftp://shop.example", "http:// or https://");
    refused("https://shop.example/", "no path");
    refused("https://shop.example/buy", "no path");
    refused("https://user@shop.example", "no path");
    refused("https://Shop.example", "lower case");
    refused("https://shop.example:0", "port");
    refused("https://shop.example:65536", "port");
    refused("https://shop.example:443", "default port");
    refused("http://shop.example:80", "default port");
    refused("https://", "no host");
    refused("https://shop.example,", "origin 2");
    refused("https://a.example,*", "origin 2");
    refused("http://[::1", "closing bracket");
}

Test(cors, an_origin_is_allowed_only_when_it_is_one_of_the_list_exactly)
{
    const char *list = "https://shop.example, http://127.0.0.1:8081";
    cr_assert(cors_allowed(list, "https://shop.example"));
    cr_assert(cors_allowed(list, "http://127.0.0.1:8081"));
    cr_assert_not(cors_allowed(list, "http://shop.example"), "another scheme");
    cr_assert_not(cors_allowed(list, "https://shop.example:8443"), "another port");
    cr_assert_not(cors_allowed(list, "https://evil.shop.example"));
    cr_assert_not(cors_allowed(list, "https://shop.example.evil"));
    cr_assert_not(cors_allowed(list, "https://shop.exampl"));
    cr_assert_not(cors_allowed(list, "null"), "a sandboxed page's origin");
    cr_assert_not(cors_allowed(list, ""));
    cr_assert_not(cors_allowed(list, NULL));
    cr_assert_not(cors_allowed("", "https://shop.example"), "none allowed by default");
}
