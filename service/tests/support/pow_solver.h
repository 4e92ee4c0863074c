/* pow_solver.h: what a buyer's page does with a proof-of-work challenge
 * (ALTCHA's widget), for the tests: try every number up to maxnumber, and
 * send the one that hashes to the challenge as ALTCHA's base64 payload. */
#ifndef SECKILL_POW_SOLVER_H
#define SECKILL_POW_SOLVER_H

#include <stddef.h>
#include <stdint.h>

/* The base64 of {"algorithm": "SHA-256", "challenge", "number", "salt",
 * "signature"} into out (cap bytes). Returns 0, or -1 when it does not fit. */
int pow_solver_payload(const char *challenge, int64_t number, const char *salt,
                       const char *signature, char *out, size_t cap);

/* Solves challenge_json (the challenge route's answer) by brute force into
 * out as pow_solver_payload writes it; *number gets the number (may be
 * NULL). Returns 0, or -1 when the JSON is not a challenge or no number up
 * to its maxnumber solves it. */
int pow_solver_solve(const char *challenge_json, char *out, size_t cap, int64_t *number);

#endif
