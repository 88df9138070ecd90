#!/usr/bin/env bash
# arm-insn.sh: guest instructions per byte of the ARM hash implementations,
# counted under qemu-user with bench/insncount (an architecture-neutral
# stand-in for cycles per byte when no ARM machine is at hand), against the
# targets of the NEON issue. BenchmarkHashBlocks hashes 256 blocks of 4 KiB
# with a 32-byte salt per op (1 MiB).
#
# usage: bench/arm-insn.sh [-n ITERATIONS] [-o TABLE.md]
#   needs: qemu-user, gcc (for the plugin), Go; run from anywhere in the repo.
# Rows: 32-bit arm (GOARM=7) on cortex-a15; 32-bit arm with the ARMv8 crypto
# instructions in AArch32 state ("ce", qemu-arm -cpu max: the only qemu-arm
# model that has them); arm64 NEON only (the NEON implementations, named, on
# -cpu max); arm64 with the crypto instructions ("ce", -cpu max). "pure Go" is the same benchmark's generic implementation in
# a purego build (which also makes the standard library's hashes pure Go);
# "stdlib" is generic in a normal build, whose SHA hashes use the
# standard library's assembly.
set -euo pipefail
cd "$(dirname "$0")/.."
n=20 outfile=
while getopts n:o: opt; do
  case $opt in
    n) n=$OPTARG ;;
    o) outfile=$OPTARG ;;
    *) sed -n '2,16p' "$0" >&2; exit 2 ;;
  esac
done
ipb=${INSN_PER_BYTE:-$(pwd)/bench/insncount/insn-per-byte}
[ -x "$ipb" ] || { echo "arm-insn: $ipb not found (set INSN_PER_BYTE)" >&2; exit 1; }
for q in qemu-arm qemu-aarch64; do
  command -v $q >/dev/null || { echo "arm-insn: $q missing (apt-get install qemu-user)" >&2; exit 1; }
done

bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
GOARCH=arm GOARM=7 go test -c -o "$bin/arm.test" ./hashes
GOARCH=arm GOARM=7 go test -c -tags purego -o "$bin/arm-purego.test" ./hashes
GOARCH=arm64 go test -c -o "$bin/arm64.test" ./hashes
GOARCH=arm64 go test -c -tags purego -o "$bin/arm64-purego.test" ./hashes

# measure QEMU CPU BINARY ALG IMPL [N]
measure() {
  QEMU_CPU=$2 "$ipb" "$1" "$bin/$3" "^BenchmarkHashBlocks\$/^$4\$/^$5\$" 1048576 "${6:-$n}" | awk '{print $1}'
}

table=$(mktemp)
{
  echo "| machine | algorithm | implementation | insn/B | target | baseline |"
  echo "| --- | --- | --- | ---: | ---: | ---: |"
  # row MACHINE QEMU CPU BIN ALG IMPL TARGET BASELINE-BIN BASELINE-NAME [N]
  row() {
    local v b ok
    v=$(measure "$2" "$3" "$4" "$5" "$6" "${10:-}")
    b=$(measure "$2" "$3" "$8" "$5" generic "${10:-}")
    ok=$(awk -v v="$v" -v t="$7" 'BEGIN { print (v <= t) ? "ok" : "MISSED" }')
    echo "| $1 | $5 | $6 | $v | ≤$7 $ok | $9 $b |"
  }
  row "arm (v7 NEON, cortex-a15)" qemu-arm cortex-a15 arm.test blake2b-256 neon 9.5 arm-purego.test "pure Go"
  row "arm (v7 NEON, cortex-a15)" qemu-arm cortex-a15 arm.test sha512 neon2x 21 arm-purego.test "pure Go"
  row "arm (v7 NEON, cortex-a15)" qemu-arm cortex-a15 arm.test sha256 neon4x 14 arm-purego.test "pure Go"
  row "arm (v7 NEON, cortex-a15)" qemu-arm cortex-a15 arm.test sha1 neon4x 9 arm-purego.test "pure Go"
  row "arm (AArch32 crypto instructions, max)" qemu-arm max arm.test sha1 ce 2.1 arm.test stdlib
  row "arm (AArch32 crypto instructions, max)" qemu-arm max arm.test sha256 ce 2.1 arm.test stdlib
  row "arm64 NEON only" qemu-aarch64 max arm64.test blake2b-256 neon2x 9.5 arm64-purego.test "pure Go"
  row "arm64 NEON only" qemu-aarch64 max arm64.test blake2b-256 neon 9.5 arm64-purego.test "pure Go"
  row "arm64 NEON only" qemu-aarch64 max arm64.test sha256 neon4x 12 arm64-purego.test "pure Go"
  row "arm64 NEON only" qemu-aarch64 max arm64.test sha512 neon2x 16 arm64-purego.test "pure Go"
  row "arm64 NEON only" qemu-aarch64 max arm64.test sha1 neon4x 9 arm64-purego.test "pure Go"
  row "arm64 crypto instructions" qemu-aarch64 max arm64.test sha1 ce 1.73 arm64.test stdlib 100
  row "arm64 crypto instructions" qemu-aarch64 max arm64.test sha256 ce 1.71 arm64.test stdlib 100
  row "arm64 crypto instructions" qemu-aarch64 max arm64.test sha512 ce 3.95 arm64.test stdlib 100
} | tee "$table"
[ -z "$outfile" ] || cp "$table" "$outfile"
! grep -q MISSED "$table"
