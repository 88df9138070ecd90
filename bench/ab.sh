#!/usr/bin/env bash
# Times the commands of this tree against those of another revision on the
# same page-cached images, alternating them so that both see the same
# machine load, and prints medians and new/old ratios (a refactor keeps the
# speed: run this before landing it).
#
#   bench/ab.sh [-r REV] [-s SIZE] [-n RUNS] [-d DIR]
#
# REV defaults to origin/main if it exists, else HEAD. Jobs: veritygen and
# veritycheck (sha256) on a raw image, veritygen on its img2simg form (needs
# img2simg, Debian's android-sdk-libsparse-utils), veritygen --append --fec
# and --append --fec --avb (signed with RSA-4096) on a copy of the raw
# image (made, and synced, before the clock starts).
# JOBS="gen check" runs only those.
set -euo pipefail
rev="" size=1GiB runs=5 dir=${TMPDIR:-/tmp}
while getopts "r:s:n:d:" opt; do
  case $opt in
    r) rev=$OPTARG ;; s) size=$OPTARG ;; n) runs=$OPTARG ;; d) dir=$OPTARG ;;
    *) sed -n '2,11p' "$0"; exit 2 ;;
  esac
done
root=$(cd "$(dirname "$0")/.." && pwd)
if [ -z "$rev" ]; then
  rev=HEAD
  git -C "$root" rev-parse -q --verify origin/main >/dev/null && rev=origin/main
fi
work=$(mktemp -d "$dir/ab.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir "$work/old" "$work/new" "$work/src"
git -C "$root" archive "$rev" | tar -x -C "$work/src"
(cd "$work/src" && go build -o "$work/old/" ./cmd/veritygen ./cmd/veritycheck)
(cd "$root" && go build -o "$work/new/" ./cmd/veritygen ./cmd/veritycheck)
(cd "$root" && go run ./testimages/_mksample -size "$size" "$work/img")
img2simg "$work/img" "$work/img.simg"
cat "$work/img" "$work/img.simg" > /dev/null   # into the page cache
salt=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
"$work/new/veritygen" --salt="$salt" --uuid=00000000-0000-4000-8000-000000000000 --root-hash-file="$work/root" "$work/img" "$work/img.verity" >/dev/null
rh=$(cat "$work/root")

secs() { local t0 t1; t0=$(date +%s.%N); "$@" >/dev/null 2>&1 || { echo "bench: $* failed" >&2; exit 1; }; t1=$(date +%s.%N); echo "$t1 - $t0" | bc -l; }
median() { sort -g | awk '{a[NR]=$1} END {m=(NR%2)?a[(NR+1)/2]:(a[NR/2]+a[NR/2+1])/2; printf "%.3f", m}'; }

echo "old: $(git -C "$root" rev-parse --short "$rev"), new: this tree; $size, median of $runs; load $(cut -d' ' -f1-3 /proc/loadavg)"
printf "%-16s %9s %9s %7s\n" job "old (s)" "new (s)" new/old
key="$root/avb/testdata/vectors/keys/rsa4096.pem"
for job in ${JOBS:-gen check gen-sparse append-fec append-avb}; do
  : > "$work/t.old"; : > "$work/t.new"
  for _ in $(seq "$runs"); do
    for side in old new; do
      b="$work/$side"
      case $job in
        gen) secs "$b/veritygen" --salt="$salt" "$work/img" "$work/out.verity" >> "$work/t.$side" ;;
        check) secs "$b/veritycheck" --root-hash="$rh" "$work/img" "$work/img.verity" >> "$work/t.$side" ;;
        gen-sparse) secs "$b/veritygen" --salt="$salt" "$work/img.simg" "$work/out.verity" >> "$work/t.$side" ;;
        append-fec | append-avb)
          cp "$work/img" "$work/a.img" && sync "$work/a.img"
          avb=()
          [ "$job" = append-avb ] && avb=(--avb --avb-algorithm=SHA256_RSA4096 --avb-key="$key")
          secs "$b/veritygen" --append --fec "${avb[@]}" --salt="${salt:0:40}" "$work/a.img" >> "$work/t.$side" ;;
      esac
      rm -f "$work/out.verity" "$work/a.img"
    done
  done
  o=$(median < "$work/t.old") n=$(median < "$work/t.new")
  printf "%-16s %9s %9s %6.2fx\n" "$job" "$o" "$n" "$(echo "$n / $o" | bc -l)"
done
echo "load $(cut -d' ' -f1-3 /proc/loadavg)"
