#!/usr/bin/env bash
# Line and branch coverage of the module's files by the fuzzing corpora
# (the seeds in fuzz/corpus and what runs added in build/fuzz/corpus):
# each harness is built again with clang's source-based coverage, replays
# its corpus once, and llvm-cov reports on the files of src/c it drives.
#
#   fuzz/coverage.sh            (after `make fuzz`; `make fuzz-coverage`)
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
out=build/fuzz/coverage
cc=${FUZZ_CC:-clang-14}
mkdir -p "$out"
rm -f "$out"/*.profraw

incs=()
for d in src/core src/event src/event/modules src/os/unix objs src/http \
         src/http/modules src/http/v2; do
    incs+=(-I "build/nginx-src/$d")
done
incs+=(-I src/c -I fuzz)
flags=(-g -O0 -fprofile-instr-generate -fcoverage-mapping -fsanitize=fuzzer
       -Wno-unused-parameter)

build() {   # NAME SOURCES...
    local name=$1
    shift
    "$cc" "${flags[@]}" "${incs[@]}" "$@" -lz -lcrypto -o "$out/$name"
}

ws=(fuzz/ws_world.c fuzz/ngx_fuzz_nginx.c src/c/ngx_http_jvm_ws_handshake.c
    src/c/ngx_http_jvm_websocket.c src/c/ngx_http_jvm_deflate.c
    src/c/ngx_http_jvm_ws_check.c)
build fuzz_ws_frames fuzz/fuzz_ws_frames.c "${ws[@]}"
build fuzz_ws_handshake fuzz/fuzz_ws_handshake.c "${ws[@]}"
build fuzz_inflate fuzz/fuzz_inflate.c fuzz/ngx_fuzz_nginx.c \
      src/c/ngx_http_jvm_deflate.c
build fuzz_upload fuzz/fuzz_upload.c fuzz/ngx_fuzz_nginx.c \
      src/c/ngx_http_jvm_upload.c
build fuzz_request fuzz/fuzz_request.c src/c/ngx_http_jvm_request.c \
      src/c/ngx_http_jvm_wire.c "${ws[@]}"

objects=()
for name in fuzz_ws_frames fuzz_ws_handshake fuzz_inflate fuzz_upload \
            fuzz_request; do
    dirs=("fuzz/corpus/$name")
    [ -d "build/fuzz/corpus/$name" ] && dirs+=("build/fuzz/corpus/$name")
    LLVM_PROFILE_FILE="$out/$name.profraw" "$out/$name" -runs=0 \
        "${dirs[@]}" > "$out/$name.log" 2>&1
    if [ ${#objects[@]} -eq 0 ]; then
        objects+=("$out/$name")
    else
        objects+=(-object "$out/$name")
    fi
done

llvm-profdata-14 merge -sparse "$out"/*.profraw -o "$out/all.profdata"
llvm-cov-14 report -instr-profile="$out/all.profdata" "${objects[@]}" \
    src/c/ngx_http_jvm_ws_handshake.c src/c/ngx_http_jvm_websocket.c \
    src/c/ngx_http_jvm_deflate.c src/c/ngx_http_jvm_ws_check.c src/c/ngx_http_jvm_upload.c \
    src/c/ngx_http_jvm_request.c \
    src/c/ngx_http_jvm_wire.c
