#!/usr/bin/env bash
# Times veritygen against `veritysetup format` and veritycheck against
# `veritysetup verify` on the same page-cached image, alternating the two so
# that both see the same machine load, and prints medians and ratios.
#
#   bench/compare.sh [-s SIZE] [-n RUNS] [-a "sha256 sha1 sha512 blake2b-256"] [-f "2 24"] [-d DIR]
#
# veritysetup has no blake2b-256: that row compares against its blake2b-512.
# -f also times the tree with error correction (--fec-device, each roots
# value given; sha256), at most 3 runs each: veritysetup takes minutes.
set -euo pipefail
size=1GiB runs=5 algs="sha256" fecroots="" dir=${TMPDIR:-/tmp}
while getopts "s:n:a:f:d:" opt; do
  case $opt in
    s) size=$OPTARG ;; n) runs=$OPTARG ;; a) algs=$OPTARG ;; f) fecroots=$OPTARG ;; d) dir=$OPTARG ;;
    *) sed -n '2,11p' "$0"; exit 2 ;;
  esac
done
command -v veritysetup >/dev/null || { echo "bench: veritysetup not found (apt-get install cryptsetup-bin)" >&2; exit 2; }
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d "$dir/veritybench.XXXXXX")
trap 'rm -rf "$work"' EXIT
(cd "$root" && go build -o "$work/veritygen" ./cmd/veritygen && go build -o "$work/veritycheck" ./cmd/veritycheck)
(cd "$root" && go run ./testimages/_mksample -size "$size" "$work/img")
cat "$work/img" > /dev/null   # into the page cache
salt=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')

# secs CMD...: wall-clock seconds of one run.
secs() { local t0 t1; t0=$(date +%s.%N); "$@" >/dev/null 2>&1; t1=$(date +%s.%N); echo "$t1 - $t0" | bc -l; }
median() { sort -g | awk '{a[NR]=$1} END {m=(NR%2)?a[(NR+1)/2]:(a[NR/2]+a[NR/2+1])/2; printf "%.3f", m}'; }

printf "%-12s %-7s %10s %12s %7s\n" alg job ours_s veritysetup_s ratio
for alg in $algs; do
  peer=$alg; [ "$alg" = blake2b-256 ] && peer=blake2b-512
  "$work/veritygen" --hash="$alg" --salt="$salt" "$work/img" "$work/ours.verity" --root-hash-file="$work/ours.root" >/dev/null
  veritysetup format --hash="$peer" --salt="$salt" "$work/img" "$work/peer.verity" --root-hash-file="$work/peer.root" >/dev/null
  g_ours=() g_peer=() c_ours=() c_peer=()
  for _ in $(seq "$runs"); do
    rm -f "$work/peer.verity.t"
    g_ours+=("$(secs "$work/veritygen" --hash="$alg" --salt="$salt" "$work/img" "$work/ours.verity.t")")
    g_peer+=("$(secs veritysetup format --hash="$peer" --salt="$salt" "$work/img" "$work/peer.verity.t")")
    c_ours+=("$(secs "$work/veritycheck" --root-hash-file="$work/ours.root" "$work/img" "$work/ours.verity")")
    c_peer+=("$(secs veritysetup verify "$work/img" "$work/peer.verity" "$(cat "$work/peer.root")")")
  done
  for job in gen check; do
    if [ $job = gen ]; then o=$(printf '%s\n' "${g_ours[@]}" | median); p=$(printf '%s\n' "${g_peer[@]}" | median)
    else o=$(printf '%s\n' "${c_ours[@]}" | median); p=$(printf '%s\n' "${c_peer[@]}" | median); fi
    printf "%-12s %-7s %10s %12s %6.2fx\n" "$alg" "$job" "$o" "$p" "$(echo "$p / $o" | bc -l)"
  done
done
for roots in $fecroots; do
  g_ours=() g_peer=()
  for _ in $(seq "$(( runs < 3 ? runs : 3 ))"); do
    rm -f "$work/peer.verity.t" "$work/peer.fec"
    g_ours+=("$(secs "$work/veritygen" --salt="$salt" --fec-device="$work/ours.fec" --fec-roots="$roots" "$work/img" "$work/ours.verity.t")")
    g_peer+=("$(secs veritysetup format --salt="$salt" --fec-device="$work/peer.fec" --fec-roots="$roots" "$work/img" "$work/peer.verity.t")")
  done
  cmp -s "$work/ours.fec" "$work/peer.fec" || echo "bench: the FEC parity differs from veritysetup's (roots $roots)" >&2
  o=$(printf '%s\n' "${g_ours[@]}" | median); p=$(printf '%s\n' "${g_peer[@]}" | median)
  printf "%-12s %-7s %10s %12s %6.2fx\n" "sha256" "fec$roots" "$o" "$p" "$(echo "$p / $o" | bc -l)"
done
echo "($size image, median of $runs alternating runs, $(nproc) CPUs; ratio = veritysetup time / ours)"
