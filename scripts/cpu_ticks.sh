#!/usr/bin/env bash
# cpu_ticks.sh: the CPU processes spent so far, read from /proc; sourced by
# scripts/bench_cluster.sh, which charge each request the CPU of every process taking part.

# ticks PID: CPU time of a process so far, in clock ticks (utime + stime of all its threads); 0 if
# gone.
ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat" 2>/dev/null || echo 0; }
# shellcheck disable=SC2034  # used by the scripts that source this one
tick_us=$((1000000 / $(getconf CLK_TCK)))
# pg_ticks DIR: PostgreSQL of the run folder DIR: the postmaster and its children (the worker's
# backend, the writers), living and gone (the postmaster's cutime + cstime: a COPY's backend exits
# with its psql).
pg_ticks() {
    local pm t p
    read -r pm <"$1/pg/postmaster.pid"
    t=$(awk '{ print $16 + $17 }' "/proc/$pm/stat")
    for p in $pm $(cat "/proc/$pm/task/$pm/children" 2>/dev/null); do t=$((t + $(ticks "$p"))); done
    echo "$t"
}
