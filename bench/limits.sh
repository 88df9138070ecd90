#!/usr/bin/env bash
# Per-core speed of our hash kernels against the C kernels of bench/limits
# (instruments, not the project's code), run alternately on the same core so
# that both see the same machine, and prints medians and ratios.
#
#   bench/limits.sh [-n ROUNDS] [-c CPU] [-l LIMITS_DIR]
#
# Ours: BenchmarkHashBlocks in hashes/ (1 MiB of 4 KiB blocks, 32-byte salt).
# C: bench/limits' bench on 256 messages (1 MiB, as ours). Its MB/s counts
# salt and block (4128 bytes a message); here it is scaled to block bytes
# (x 4096/4128) so that both count the same bytes. Needs gcc, libssl-dev and
# libb2-dev (what bench/limits checks its kernels against).
set -euo pipefail
rounds=5 cpu=0
root=$(cd "$(dirname "$0")/.." && pwd)
limits=$root/bench/limits
while getopts "n:c:l:" opt; do
  case $opt in
    n) rounds=$OPTARG ;; c) cpu=$OPTARG ;; l) limits=$OPTARG ;;
    *) sed -n '2,13p' "$0"; exit 2 ;;
  esac
done
[ -d "$limits" ] || { echo "limits: no $limits (give -l DIR)" >&2; exit 2; }
work=$(mktemp -d "${TMPDIR:-/tmp}/veritylimits.XXXXXX")
trap 'rm -rf "$work"' EXIT
cp -r "$limits" "$work/limits"
make -s -C "$work/limits" >/dev/null 2>"$work/make.log" || { cat "$work/make.log" >&2; echo "limits: build failed (apt-get install gcc libssl-dev libb2-dev)" >&2; exit 2; }
(cd "$root" && go test -c -o "$work/hashes.test" ./hashes)

# Our implementation -> the C variant it is measured against (the fastest
# C kernel of the same technique).
pairs="sha1/avx512:sha1_mb_tra_avx512 sha1/shani4:sha1_ni_x4 sha1/avx2:sha1_mb_tra_avx2
sha256/avx512:sha256_mb_tra2_avx512 sha256/shani4:sha256_ni_x4 sha256/avx2:sha256_mb_tra_avx2
sha512/avx512:sha512_mb_tra2_avx512 sha512/avx2:sha512_mb_tra_avx2
blake2b-256/avx512:b2b256_mb_tra2_avx512 blake2b-256/avx2:b2b256_mb_tra_avx2"
sel=$(for p in $pairs; do echo "=${p#*:}"; done | sort -u | tr '\n' ' ')

for r in $(seq "$rounds"); do
  taskset -c "$cpu" "$work/limits/bench" -t 1 -s 0.3 -n 256 $sel 2>/dev/null |
    awk '$1 !~ /^#/ && $4 ~ /^[0-9]+$/ {printf "C %s %.0f\n", $1, $4 * 4096 / 4128}' >> "$work/results"
  taskset -c "$cpu" "$work/hashes.test" -test.run '^$' -test.bench 'HashBlocks/' -test.benchtime 0.3s -test.cpu 1 |
    awk '/^BenchmarkHashBlocks/ {sub(/^BenchmarkHashBlocks\//, "", $1); for (i = 1; i <= NF; i++) if ($(i+1) == "MB/s") printf "G %s %.0f\n", $1, $i}' >> "$work/results"
done

median() { sort -g | awk '{a[NR]=$1} END {if (NR == 0) exit; m=(NR%2)?a[(NR+1)/2]:(a[NR/2]+a[NR/2+1])/2; printf "%.0f", m}'; }
printf "%-20s %8s  %-24s %8s %6s\n" ours MB/s C MB/s ratio
for p in $pairs; do
  ours=${p%%:*} c=${p#*:}
  o=$(awk -v k="$ours" '$1 == "G" && $2 == k {print $3}' "$work/results" | median)
  [ -n "$o" ] || continue # an implementation this CPU cannot run
  cm=$(awk -v k="$c" '$1 == "C" && $2 == k {print $3}' "$work/results" | median)
  [ -n "$cm" ] || { printf "%-20s %8s  %-24s %8s\n" "$ours" "$o" "$c" "-"; continue; }
  printf "%-20s %8s  %-24s %8s %6.2f\n" "$ours" "$o" "$c" "$cm" "$(echo "$o / $cm" | bc -l)"
done
echo "(medians of $rounds alternating rounds on CPU $cpu; MB/s of 4 KiB blocks, salt not counted)"
