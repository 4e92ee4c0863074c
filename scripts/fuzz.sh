#!/usr/bin/env bash
# fuzz.sh: `make fuzz`: builds the libFuzzer target of the request parsers with clang and runs it
# for FUZZ_SECONDS (default 60) from the checked-in corpus; a crash leaves its input in run/fuzz.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
seconds=${FUZZ_SECONDS:-60}
out=run/fuzz
mkdir -p "$out/corpus"
scripts/deps.sh clang libclang-rt-14-dev
cmake -S . -B build >/dev/null # the generated scripts_embedded.c and version.h
cmake --build build --target seckill_common >/dev/null
# All of common (the library is one unit: its files call each other), the server's parsers only,
# and the laboratory's route table (linked into every build of the server: the router reads it).
# Each file compiled apart, as many at once as there are cores (one clang for all of them took
# the whole 20 s on one core), then linked.
common=service/common server=service/server lab=service/lab
sources=(service/tests/fuzz/fuzz_request.c "$common"/*.c "$server"/{events,http_framing,router,gate}.c
    "$lab"/lab_routes.c build/generated/scripts_embedded.c)
flags=(-std=c11 -D_GNU_SOURCE -g -O1 "-fsanitize=fuzzer,address,undefined" -fno-sanitize-recover=all)
# Each pkg-config on a line of its own, where set -e sees it fail.
cflags_text=$(pkg-config --cflags hiredis jansson libpq libcrypto libmicrohttpd)
libs_text=$(pkg-config --libs hiredis jansson libpq libcrypto libmicrohttpd)
read -ra cflags <<<"$cflags_text"
read -ra libs <<<"$libs_text"
rm -rf "$out/obj"
mkdir -p "$out/obj"
# shellcheck disable=SC2016  # $0 and $1 are the inner shell's: the source, the object folder
printf '%s\0' "${sources[@]}" | xargs -0 -P "$(nproc)" -I{} sh -c 'o=$1; shift; exec "$@" -c "$0" -o "$o/${0##*/}.o"' \
    {} "$out/obj" clang "${flags[@]}" -I"$common" -I"$server" -I"$lab" -Ibuild/generated "${cflags[@]}"
clang "${flags[@]}" "$out"/obj/*.o "${libs[@]}" -lpthread -o "$out/fuzz_request"
cp -n service/tests/fuzz/corpus/* "$out/corpus/" 2>/dev/null || true
"$out/fuzz_request" -max_total_time="$seconds" -max_len=4096 -timeout=5 \
    -artifact_prefix="$out/" "$out/corpus" 2>&1 | tail -n 5
echo "fuzz: ${seconds}s without a crash (corpus: $out/corpus)"
