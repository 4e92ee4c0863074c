#!/usr/bin/env bash
# code_size.sh: the size rule of service/ (tests aside): no .c file over 550 lines and no function
# over 80 lines, counted between a function's opening and closing braces at column 0 (the layout
# clang-format gives every function). Prints each breach (exit 1). `make lint` runs it.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
files=$(find service -name '*.c' -not -path 'service/tests/*' | sort)
# shellcheck disable=SC2086 # the paths hold no spaces: they are ours
awk -v max_file=550 -v max_fn=80 '
    function file_done() { if (file != "" && lines > max_file) { print file ": " lines " lines (at most " max_file ")"; bad = 1 } }
    FNR == 1 { file_done(); start = 0 }
    /^\{/ { start = FNR; name = last }
    /^\}/ && start { if (FNR - start - 1 > max_fn) { print FILENAME ":" start ": " FNR - start - 1 " lines in " name " (at most " max_fn ")"; bad = 1 }; start = 0 }
    { last = $0; file = FILENAME; lines = FNR }
    END { file_done(); exit bad }
' $files
