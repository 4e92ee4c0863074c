/* version.h: the release of seckill, printed by --version. */
#ifndef SECKILL_VERSION_H
#define SECKILL_VERSION_H

#define SECKILL_VERSION "0.1.0"

#endif
