/* log.h: one line per event in logfmt, to stderr (or a given file):
 *   ts=2026-11-22T05:53:22.123Z level=info component=server msg="..." */
#ifndef SECKILL_LOG_H
#define SECKILL_LOG_H

typedef enum log_level { LOG_DEBUG = 0, LOG_INFO, LOG_WARN, LOG_ERROR } log_level;

/* Parses "debug", "info", "warn", "error". Returns 0 or -1. */
int log_parse_level(const char *name, log_level *out);

/* Sets the threshold once at start-up, before any thread logs. */
void log_set_level(log_level level);

/* Logs msg (printf format) for component to fd (an access log opened for
 * O_APPEND) when level passes the threshold. */
void log_msg_to(int fd, log_level level, const char *component, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* The same to stderr (fd 2): the service's log. */
#define log_msg(level, component, ...) log_msg_to(2, level, component, __VA_ARGS__)

#endif
