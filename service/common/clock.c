/* clock.c: reads of the wall and monotonic clocks, in the units callers use. */
#include "clock.h"

#define NS_PER_S 1000000000L

int64_t clock_wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t clock_wall_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec;
}

int64_t clock_mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

struct timespec clock_after(clockid_t which, int64_t in_ms)
{
    struct timespec ts;
    clock_gettime(which, &ts);
    ts.tv_sec += (time_t)(in_ms / 1000);
    ts.tv_nsec += (long)(in_ms % 1000) * 1000000L;
    if (ts.tv_nsec >= NS_PER_S) {
        ts.tv_sec++;
        ts.tv_nsec -= NS_PER_S;
    } else if (ts.tv_nsec < 0) {
        ts.tv_sec--;
        ts.tv_nsec += NS_PER_S;
    }
    return ts;
}

int clock_cond_init(pthread_cond_t *cond)
{
    pthread_condattr_t attr;
    if (pthread_condattr_init(&attr) != 0)
        return -1;
    int rc = pthread_condattr_setclock(&attr, CLOCK_MONOTONIC) == 0 &&
                     pthread_cond_init(cond, &attr) == 0
                 ? 0
                 : -1;
    pthread_condattr_destroy(&attr);
    return rc;
}

double clock_seconds_between(struct timespec since, struct timespec until)
{
    return (double)(until.tv_sec - since.tv_sec) + (double)(until.tv_nsec - since.tv_nsec) / 1e9;
}
