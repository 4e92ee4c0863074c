/* webhook_endpoints.h: the shop's webhook endpoints as the config lists them
 * (webhook_endpoints = "url secret,url secret"): where seckill-webhooks
 * posts the orders' events, and the secret each one's signatures use. Pure. */
#ifndef SECKILL_WEBHOOK_ENDPOINTS_H
#define SECKILL_WEBHOOK_ENDPOINTS_H

#include <stddef.h>

#define WEBHOOK_ENDPOINTS_MAX 16
#define WEBHOOK_URL_MAX 1024
#define WEBHOOK_SECRET_MIN 16
#define WEBHOOK_SECRET_MAX 256

typedef struct webhook_endpoint {
    char url[WEBHOOK_URL_MAX];           /* http:// or https://, no space, no comma */
    char secret[WEBHOOK_SECRET_MAX + 1]; /* visible ASCII, no comma */
} webhook_endpoint;

/* Parses a comma-separated list of "<url> <secret>" entries ("" is none)
 * into out (room for cap). Returns how many, or -1 with why naming the
 * entry by position and what is wrong, never a secret's text: a URL that is
 * not http(s), a secret too short or too long, a URL listed twice, too many
 * entries. */
int webhook_endpoints_parse(const char *list, webhook_endpoint *out, size_t cap, char *why,
                            size_t whylen);

/* The config's check of the key: 0, or -1 with why. */
int webhook_endpoints_check(const char *list, char *why, size_t whylen);

#endif
