#!/usr/bin/env bash
# progress.sh: where a long script is (step k of n, elapsed, about how long is left); sourced by
# scripts/bench_cluster.sh (loadtest/seckill_lab/progress.py is the same line for make bench and
# make experiments).
#
#   progress_begin NAME N           N steps of about the same cost: what is left is the mean time
#                                   of a finished step times the steps not finished.
#   progress_begin_timed NAME S...  one step per S, its nominal seconds (a wrk round's duration,
#                                   or what the step took in an earlier run): what is left is the
#                                   nominal seconds not finished, scaled by how long the finished
#                                   steps took against theirs.
#   progress_step LABEL             the next step begins.
#   progress_note TEXT...           one ordinary line of the script's (in place of echo >&2).
#   progress_break                  before output that progress does not know of (die, a trap):
#                                   ends the line being redrawn, so that both stay readable.
#   progress_end                    the last step is done: "NAME: done in 4m12s".
#
# All of it goes to stderr. On a terminal, one line "NAME: [k/n] LABEL — elapsed 3m12s, about 9m
# left" is redrawn in place at each step (there is no timer between steps), and notes appear
# above it; otherwise each step is a plain line, for logs. Elapsed is counted from the script's
# start (bash's SECONDS): it includes the build and the set-up before the first step.

progress_name='' progress_n=0 progress_k=0 progress_timed=0 progress_t0=0
progress_head='' progress_label='' progress_tail='' progress_drawn=0 progress_tty=0 progress_cols=80
progress_weights=()

progress__now_ms() {
    local t=${EPOCHREALTIME/[.,]/}
    echo $((t / 1000))
}

# progress__dur SECONDS: 42s, 3m12s, 1h05m.
progress__dur() {
    local s=$1
    if ((s < 60)); then
        echo "${s}s"
    elif ((s < 3600)); then
        printf '%dm%02ds\n' $((s / 60)) $((s % 60))
    else
        printf '%dh%02dm\n' $((s / 3600)) $((s % 3600 / 60))
    fi
}

# progress__left SECONDS: as precise as an estimate deserves: whole minutes from two minutes up,
# tens of seconds below.
progress__left() {
    local s=$1
    if ((s >= 120)); then
        echo "about $(((s + 30) / 60))m left"
    elif ((s >= 10)); then
        echo "about $(progress__dur $(((s + 5) / 10 * 10))) left"
    else
        echo "a few seconds left"
    fi
}

# progress__draw: the step's line; on a terminal it must fit one row (a wrapped line cannot be
# redrawn), so a long label is cut rather than the figures.
progress__draw() {
    local label=$progress_label room line
    if ((progress_tty)); then
        room=$((progress_cols - 1 - ${#progress_head} - ${#progress_tail}))
        ((${#label} <= room)) || label="${label:0:room > 3 ? room - 3 : 0}..."
        line="$progress_head$label$progress_tail"
        printf '\r\033[K%s' "${line:0:progress_cols-1}" >&2 # a very narrow terminal: cut all
        progress_drawn=1
    else
        printf '%s%s%s\n' "$progress_head" "$label" "$progress_tail" >&2
    fi
}

progress__start() {
    progress_name=$1 progress_n=${#progress_weights[@]} progress_k=0
    progress_t0=$(progress__now_ms)
    progress_tty=0
    if [[ -t 2 ]]; then
        progress_tty=1
        progress_cols=$(tput cols 2>/dev/null || echo 80)
        ((progress_cols >= 20)) || progress_cols=80
    fi
}

progress_begin() {
    local i
    progress_weights=()
    for ((i = 0; i < $2; i++)); do progress_weights+=(1); done
    progress_timed=0
    progress__start "$1"
}

progress_begin_timed() {
    progress_weights=("${@:2}")
    progress_timed=1
    progress__start "$1"
}

progress_step() {
    local now elapsed_ms done_w=0 left_w=0 i left
    now=$(progress__now_ms)
    elapsed_ms=$((now - progress_t0))
    for ((i = 0; i < progress_n; i++)); do
        if ((i < progress_k)); then done_w=$((done_w + progress_weights[i])); else left_w=$((left_w + progress_weights[i])); fi
    done
    progress_k=$((progress_k + 1))
    if ((done_w > 0 && elapsed_ms > 0)); then
        left=$(progress__left $((elapsed_ms * left_w / done_w / 1000)))
    elif ((progress_timed)); then
        left=$(progress__left "$left_w") # nothing measured yet: the nominal seconds as they are
    else
        left="estimating what is left"
    fi
    progress_head="$progress_name: [$progress_k/$progress_n] " progress_label=$1
    progress_tail=" — elapsed $(progress__dur "$SECONDS"), $left"
    progress__draw
}

progress_note() {
    ((progress_drawn)) && printf '\r\033[K' >&2
    printf '%s\n' "$*" >&2
    ((progress_drawn)) && progress__draw
    return 0
}

progress_break() {
    ((progress_drawn)) && printf '\n' >&2
    progress_drawn=0
}

progress_end() {
    ((progress_drawn)) && printf '\r\033[K' >&2
    progress_drawn=0
    printf '%s: done in %s (%d steps)\n' "$progress_name" "$(progress__dur "$SECONDS")" "$progress_n" >&2
}
