/* log.c: logfmt lines on stderr (or a file of the caller's); one write per line so threads
 * don't interleave. */
#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"

/* The threshold is set once in main before threads start, then only read. */
static log_level threshold = LOG_INFO;

static const char *level_names[] = {"debug", "info", "warn", "error"};

int log_parse_level(const char *name, log_level *out)
{
    for (int i = 0; i < 4; i++) {
        if (strcasecmp(name, level_names[i]) == 0) {
            *out = (log_level)i;
            return 0;
        }
    }
    return -1;
}

void log_set_level(log_level level)
{
    threshold = level;
}

static void log_v(int fd, log_level level, const char *component, const char *fmt, va_list ap)
{
    char line[1024], msg[768];
    struct tm tm;
    int64_t now_ms = clock_wall_ms();
    time_t now_s = (time_t)(now_ms / 1000);
    gmtime_r(&now_s, &tm);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    /* logfmt quoting: a double quote in the message becomes a single one. */
    for (char *p = msg; *p; p++)
        if (*p == '"' || *p == '\n')
            *p = *p == '"' ? '\'' : ' ';
    int n = snprintf(line, sizeof(line),
                     "ts=%04d-%02d-%02dT%02d:%02d:%02d.%03dZ level=%s component=%s msg=\"%s\"\n",
                     tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                     (int)(now_ms % 1000), level_names[level], component, msg);
    if (n >= (int)sizeof(line)) { /* cut, but keep the line a line */
        n = (int)sizeof(line) - 1;
        line[n - 1] = '\n';
    }
    ssize_t ignored = write(fd, line, (size_t)n);
    (void)ignored;
}

void log_msg_to(int fd, log_level level, const char *component, const char *fmt, ...)
{
    if (level < threshold)
        return;
    va_list ap;
    va_start(ap, fmt);
    log_v(fd, level, component, fmt, ap);
    va_end(ap);
}
