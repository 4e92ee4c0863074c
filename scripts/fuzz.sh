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
common=service/common server=service/server lab=service/lab
# shellcheck disable=SC2046  # pkg-config prints several flags on purpose
clang -std=c11 -D_GNU_SOURCE -g -O1 -fsanitize=fuzzer,address,undefined \
    -fno-sanitize-recover=all -I"$common" -I"$server" -I"$lab" -Ibuild/generated \
    service/tests/fuzz/fuzz_request.c \
    "$common"/*.c "$server"/{events,http_framing,router,gate}.c "$lab"/lab_routes.c \
    build/generated/scripts_embedded.c \
    $(pkg-config --cflags --libs hiredis jansson libpq libcrypto libmicrohttpd) -lpthread \
    -o "$out/fuzz_request"
cp -n service/tests/fuzz/corpus/* "$out/corpus/" 2>/dev/null || true
"$out/fuzz_request" -max_total_time="$seconds" -max_len=4096 -timeout=5 \
    -artifact_prefix="$out/" "$out/corpus" 2>&1 | tail -n 5
echo "fuzz: ${seconds}s without a crash (corpus: $out/corpus)"
