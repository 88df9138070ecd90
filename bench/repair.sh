#!/usr/bin/env bash
# Times `veritycheck --repair` of an image with corrupted blocks against a
# clean `veritycheck` verify of the same image (page-cached), and prints
# the medians and their ratio (issue 12: the repair should stay under 3x).
#
#   bench/repair.sh [-s SIZE] [-c BLOCKS] [-r ROOTS] [-n RUNS] [-b VERITYCHECK] [-d DIR]
#
# -c whole 4096-byte blocks of DATA are overwritten with random bytes, at
# random places (seeded: the same blocks every run). -b times another
# veritycheck binary (say, one built from main) on the same images too.
set -euo pipefail
size=1GiB corrupt=2020 roots=8 runs=3 other="" dir=${TMPDIR:-/tmp}
while getopts "s:c:r:n:b:d:" opt; do
  case $opt in
    s) size=$OPTARG ;; c) corrupt=$OPTARG ;; r) roots=$OPTARG ;; n) runs=$OPTARG ;; b) other=$OPTARG ;; d) dir=$OPTARG ;;
    *) sed -n '2,10p' "$0"; exit 2 ;;
  esac
done
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d "$dir/repairbench.XXXXXX")
trap 'rm -rf "$work"' EXIT
(cd "$root" && go build -o "$work/veritygen" ./cmd/veritygen && go build -o "$work/veritycheck" ./cmd/veritycheck)
(cd "$root" && go run ./testimages/_mksample -size "$size" "$work/pristine")
"$work/veritygen" --fec-device="$work/img.fec" --fec-roots="$roots" --root-hash-file="$work/root" "$work/pristine" "$work/pristine.verity" >/dev/null
rh=$(cat "$work/root")

secs() { local t0 t1; t0=$(date +%s.%N); "$@" >/dev/null 2>&1 || { echo "bench: $* failed" >&2; exit 1; }; t1=$(date +%s.%N); echo "$t1 - $t0" | bc -l; }
median() { sort -g | awk '{a[NR]=$1} END {m=(NR%2)?a[(NR+1)/2]:(a[NR/2]+a[NR/2+1])/2; printf "%.3f", m}'; }
fresh() { # a corrupted copy of the image, as img and img.verity
  cp "$work/pristine" "$work/img"; cp "$work/pristine.verity" "$work/img.verity"
  python3 - "$work/img" "$corrupt" <<'PY'
import os, random, sys
path, n = sys.argv[1], int(sys.argv[2])
blocks = os.path.getsize(path) // 4096
rng = random.Random(12)
with open(path, "r+b") as f:
    for b in rng.sample(range(blocks), n):
        f.seek(b * 4096); f.write(rng.randbytes(4096))
PY
  cat "$work/img" "$work/img.verity" "$work/img.fec" >/dev/null
}
check() { "$1" --root-hash="$rh" --fec-device="$work/img.fec" --fec-roots="$roots" "${@:2}" "$work/img" "$work/img.verity"; }

cat "$work/pristine" "$work/pristine.verity" >/dev/null
verify=() repair=() repair_other=()
for _ in $(seq "$runs"); do
  verify+=("$(secs "$work/veritycheck" --root-hash="$rh" "$work/pristine" "$work/pristine.verity")")
  fresh; repair+=("$(secs check "$work/veritycheck" --repair)")
  cmp -s "$work/img" "$work/pristine" || { echo "bench: the repaired image differs from the original" >&2; exit 1; }
  if [ -n "$other" ]; then fresh; repair_other+=("$(secs check "$other" --repair)"); fi
done
v=$(printf "%s\n" "${verify[@]}" | median) r=$(printf "%s\n" "${repair[@]}" | median)
echo "$size, $corrupt corrupted blocks, roots $roots, $runs runs; load: $(uptime | sed 's/.*load/load/')"
printf "clean verify     %8.3f s\n" "$v"
printf "repair           %8.3f s  (%.2fx the clean verify)\n" "$r" "$(echo "$r / $v" | bc -l)"
if [ -n "$other" ]; then
  o=$(printf "%s\n" "${repair_other[@]}" | median)
  printf "repair (%s) %8.3f s  (%.2fx)\n" "$other" "$o" "$(echo "$o / $v" | bc -l)"
fi
