#!/usr/bin/env bash
# build.sh: configures and builds with CMake into build/ (build-asan/ with SECKILL_SANITIZE=1,
# build-nolab/ with SECKILL_LAB=OFF: a server without the laboratory, build-release/ with
# SECKILL_RELEASE=1: the binaries as the Dockerfile builds them, -O3, whose warnings -O2 misses).
# SECKILL_BUILD_TYPE=Release builds build/ itself as the Dockerfile does, tests included (.ci/run:
# one build tests the image's binaries and sees their warnings); default RelWithDebInfo.
# --configure only configures (scripts/test.sh then builds what its tests need).
# A new build folder is made for Ninja, which builds the sources of a library's dependents while
# the library links, without make's per-target steps (a whole build: about a fifth less CPU);
# one made before keeps its generator.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

dir=build
flags=(-DCMAKE_BUILD_TYPE="${SECKILL_BUILD_TYPE:-RelWithDebInfo}")
if [[ ${SECKILL_SANITIZE:-0} == 1 ]]; then
    dir=build-asan
    flags=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DSECKILL_SANITIZE=ON)
elif [[ ${SECKILL_RELEASE:-0} == 1 ]]; then
    dir=build-release
    flags=(-DCMAKE_BUILD_TYPE=Release -DSECKILL_TESTS=OFF)
elif [[ ${SECKILL_LAB:-ON} == OFF ]]; then
    dir=build-nolab
    flags=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DSECKILL_LAB=OFF)
fi
[[ -f $dir/CMakeCache.txt ]] || ! command -v ninja >/dev/null || flags+=(-G Ninja)
cmake -S . -B "$dir" "${flags[@]}" >/dev/null
[[ ${1:-} != --configure ]] || exit 0
cmake --build "$dir" -j "$(nproc)"
