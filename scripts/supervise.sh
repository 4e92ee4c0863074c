# shellcheck shell=bash
# supervise.sh: the supervision of `make run` (scripts/run.sh), sourced: a process that exits is
# logged and started again after a back-off of 1 s, doubling up to 30 s, back to 1 s once it has
# lived a minute, as systemd's Restart=on-failure does it (deploy/systemd/).
#
# One loop watches every process, whichever of them is waiting out its back-off: each has its own
# time of restart, and the loop looks at each process's pid five times a second. (Waiting on the
# processes with `wait -n` and sleeping a back-off between missed a server killed during the
# worker's back-off: bash had reaped it already, `wait` answered "no such job", and it was never
# started again.) Its sleep is waited on in the background, so that Ctrl-C and 'make stop' are
# handled at once.

# child_alive PID: PID is a child of this shell and has not exited (not a zombie). Asked of the
# process itself: right after the fork its command line is still this script's, so a check by
# name could take a starting server for a dead one.
child_alive() {
    local stat state ppid
    stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
    stat=${stat##*) } # after "pid (comm) ": state, ppid, ...
    read -r state ppid _ <<<"$stat"
    [[ $state != Z && $ppid == "$$" ]]
}

# shellcheck disable=SC2154  # pid_of and since are the caller's, set by its start
# supervise DIR NAME...: watches the processes NAME..., started by the caller's function
# `start NAME` (which sets pid_of[NAME] and since[NAME], bash's SECONDS when it started); logs
# each exit into DIR/NAME.log, and starts it again after its back-off. Never returns.
supervise() {
    local dir=$1 name now status delay t
    shift
    local -A backoff due
    for name in "$@"; do backoff[$name]=1 due[$name]=; done
    for (( ; ; )); do
        t=${EPOCHREALTIME/[.,]/}
        now=$((10#$t / 1000))
        for name in "$@"; do
            if [[ -z ${due[$name]} ]] && ! child_alive "${pid_of[$name]}"; then
                status=0
                wait "${pid_of[$name]}" 2>/dev/null || status=$?
                ((SECONDS - ${since[$name]} < 60)) || backoff[$name]=1
                delay=${backoff[$name]}
                # Into its log, which the terminal follows.
                echo "run.sh: $name (pid ${pid_of[$name]}) exited with status $status;" \
                    "starting it again in $delay s" >>"$dir/$name.log"
                due[$name]=$((now + delay * 1000))
                backoff[$name]=$((delay * 2 > 30 ? 30 : delay * 2))
            elif [[ -n ${due[$name]} ]] && ((now >= due[$name])); then
                due[$name]=
                start "$name"
            fi
        done
        sleep 0.2 &
        wait $!
    done
}
