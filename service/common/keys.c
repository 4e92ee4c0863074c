/* keys.c: Redis key names, built in one place. */
#include "keys.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int keys_item_state(char *buf, size_t len, int64_t item)
{
    return snprintf(buf, len, "{item:%" PRId64 "}:state", item);
}

int keys_item_buyers(char *buf, size_t len, int64_t item)
{
    return snprintf(buf, len, "{item:%" PRId64 "}:buyers", item);
}

int keys_item_returned(char *buf, size_t len, int64_t item)
{
    return snprintf(buf, len, "{item:%" PRId64 "}:returned", item);
}

int keys_item_given_back(char *buf, size_t len, int64_t item)
{
    return snprintf(buf, len, "{item:%" PRId64 "}:given_back", item);
}

int keys_queue(char *buf, size_t len, int64_t item)
{
    return snprintf(buf, len, "seckill:{item:%" PRId64 "}:queue", item);
}

int keys_pending(char *buf, size_t len, int64_t item)
{
    return snprintf(buf, len, "seckill:{item:%" PRId64 "}:pending", item);
}

int keys_dead(char *buf, size_t len, int64_t item)
{
    return snprintf(buf, len, "seckill:{item:%" PRId64 "}:dead", item);
}

#define PROCESSING_INFIX "}:processing:"

int keys_processing(char *buf, size_t len, int64_t item, const char *worker_id)
{
    return snprintf(buf, len, "seckill:{item:%" PRId64 PROCESSING_INFIX "%s", item, worker_id);
}

int keys_claim(char *buf, size_t len, int64_t item, const char *worker_id)
{
    return snprintf(buf, len, "seckill:{item:%" PRId64 "}:claim:%s", item, worker_id);
}

int keys_parse_processing(const char *key, int64_t *item, const char **worker_id)
{
    static const char prefix[] = "seckill:{item:";
    if (strncmp(key, prefix, sizeof(prefix) - 1) != 0)
        return -1;
    const char *digits = key + sizeof(prefix) - 1;
    char *end;
    errno = 0;
    long long n = strtoll(digits, &end, 10);
    if (end == digits || errno != 0 || strncmp(end, PROCESSING_INFIX, strlen(PROCESSING_INFIX)))
        return -1;
    const char *id = end + strlen(PROCESSING_INFIX);
    if (*id == '\0')
        return -1;
    *item = (int64_t)n;
    *worker_id = id;
    return 0;
}

/* CRC16-CCITT (XMODEM: polynomial 0x1021, initial 0), the one Redis Cluster
 * hashes keys with; bitwise, as keys are short and this is not hot. */
static unsigned crc16(const char *p, size_t len)
{
    unsigned crc = 0;
    for (size_t i = 0; i < len; i++) {
        crc ^= (unsigned)(unsigned char)p[i] << 8;
        for (int b = 0; b < 8; b++)
            crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
    }
    return crc;
}

unsigned keys_slot(const char *key, size_t len)
{
    const char *open = memchr(key, '{', len);
    if (open) {
        size_t rest = len - (size_t)(open - key) - 1;
        const char *close = memchr(open + 1, '}', rest);
        if (close && close > open + 1)
            return crc16(open + 1, (size_t)(close - open - 1)) % KEYS_SLOTS;
    }
    return crc16(key, len) % KEYS_SLOTS;
}

int keys_worker_alive(char *buf, size_t len, const char *worker_id)
{
    return snprintf(buf, len, "seckill:worker:%s:alive", worker_id);
}
