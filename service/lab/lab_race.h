/* lab_race.h: two racers forced to meet at a lock's taking command, in
 * one order (fault injection, lab_faults only: the leftover_key scenario).
 *
 * Document 000's GETSET lock leaves its key behind when two clients read
 * the same expired value and then GETSET one after the other: the second
 * overwrites the winner's value, so the winner's unlock no longer finds
 * its own and does not delete. Under load that meeting is luck; a request
 * with ?race=first or ?race=second (LAB_FAULT_RACE_*) makes it happen
 * every time, as ?crash=after_setnx makes a crash happen:
 *  - second, at the point: says it waits there, then waits until first
 *    has passed its taking command;
 *  - first, at the point: waits until second waits there, runs its taking
 *    command, then says it has passed.
 * So second has looked at the lock (the GETSET lock: read the expired
 * value) before first took it, and takes after first. The two speak
 * through the string {item:N}:lab:race:<strategy> ("waiting", then
 * "passed"); it outlives a round by a minute at most and a new round
 * clears it. */
#ifndef SECKILL_LAB_RACE_H
#define SECKILL_LAB_RACE_H

#include "lab_strategy.h"

/* Longest wait of a racer for the other one: then it goes on alone (and
 * logs it), so a lone racer delays its answer but never hangs. */
#define LAB_RACE_WAIT_MS 10000

/* Right before a lock's taking command: the waits above. A no-op unless
 * r->fault is LAB_FAULT_RACE_FIRST or LAB_FAULT_RACE_SECOND. */
void lab_race_before_take(lab_ctx *c, const lab_request *r);

/* Right after the taking command (whether it won or not): first says it
 * has passed. A no-op unless r->fault is LAB_FAULT_RACE_FIRST. */
void lab_race_after_take(lab_ctx *c, const lab_request *r);

#endif
