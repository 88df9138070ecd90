#!/usr/bin/env bash
# Times the avbtool front (veritygen under the name avbtool) against avbtool
# 1.3.0 itself on the same page-cached images, alternating the two so that
# both see the same machine load, and prints medians and ratios: the steps
# of an Android build (add_hash_footer on a boot image, add_hashtree_footer
# without FEC on a system image, make_vbmeta_image including both,
# info_image of the system image).
#
#   bench/avbtool.sh -t PATH/avbtool.py [-b BOOT_SIZE] [-s SYSTEM_SIZE] [-n RUNS] [-d DIR]
#
# avbtool is one Python file of AOSP external/avb (not packaged): e.g. from
# github.com/LineageOS/android_external_avb, branch lineage-21.0.
set -euo pipefail
avbtool="" boot=64MiB system=512MiB runs=5 dir=${TMPDIR:-/tmp}
while getopts "t:b:s:n:d:" opt; do
  case $opt in
    t) avbtool=$OPTARG ;; b) boot=$OPTARG ;; s) system=$OPTARG ;; n) runs=$OPTARG ;; d) dir=$OPTARG ;;
    *) sed -n '2,12p' "$0"; exit 2 ;;
  esac
done
[ -n "$avbtool" ] && [ -f "$avbtool" ] || { echo "bench: give avbtool.py with -t (see the comment at the top)" >&2; exit 2; }
command -v python3 >/dev/null || { echo "bench: python3 not found" >&2; exit 2; }
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d "$dir/avbbench.XXXXXX")
trap 'rm -rf "$work"' EXIT
(cd "$root" && go build -o "$work/avbtool" ./cmd/avbtool)
(cd "$root" && go run ./testimages/_mksample -size "$boot" "$work/boot.src" && go run ./testimages/_mksample -size "$system" "$work/system.src")
keys="$root/avb/testdata/vectors/keys"
[ -f "$keys/rsa4096.pem" ] || keys="$root/internal/front/fronttest/testdata/keys"
salt=5eedf00d
bsize=$(( ($(stat -c %s "$work/boot.src") + 2*1024*1024) / 4096 * 4096 ))
ssize=$(( ($(stat -c %s "$work/system.src") * 102 / 100 + 4*1024*1024) / 4096 * 4096 ))

# secs CMD...: wall-clock seconds of one run.
secs() { local t0 t1; t0=$(date +%s.%N); "$@" >/dev/null 2>&1; t1=$(date +%s.%N); echo "$t1 - $t0" | bc -l; }
median() { sort -g | awk '{a[NR]=$1} END {m=(NR%2)?a[(NR+1)/2]:(a[NR/2]+a[NR/2+1])/2; printf "%.4f", m}'; }

# step NAME SETUP ARGS...: SETUP (a shell snippet, untimed) makes the inputs
# in $w; ARGS run under each tool there.
step() {
  local name=$1 setup=$2; shift 2
  local ours=() peer=()
  for _ in $(seq "$runs"); do
    for who in ours peer; do
      # The inputs are synced before the clock starts: the front syncs what it writes, and
      # would otherwise also pay for the setup's dirty pages.
      w="$work/$who"; rm -rf "$w"; mkdir -p "$w"; (cd "$w" && eval "$setup"); sync
      if [ $who = ours ]; then
        ours+=("$(cd "$w" && secs "$work/avbtool" "$@")")
      else
        peer+=("$(cd "$w" && secs python3 "$avbtool" "$@")")
      fi
    done
    cmp -s "$work/ours/out" "$work/peer/out" || { echo "bench: $name: the outputs differ" >&2; exit 1; }
  done
  local o p
  o=$(printf '%s\n' "${ours[@]}" | median); p=$(printf '%s\n' "${peer[@]}" | median)
  printf "%-22s %10s %10s %7.1f\n" "$name" "$o" "$p" "$(echo "$p / $o" | bc -l)"
}

printf "%-22s %10s %10s %7s\n" step ours_s avbtool_s ratio
step "add_hash_footer $boot" "cat ../boot.src > out" add_hash_footer --image out --partition_size "$bsize" \
  --partition_name boot --salt $salt --algorithm SHA256_RSA4096 --key "$keys/rsa4096.pem"
step "add_hashtree_footer $system" "cat ../system.src > out" add_hashtree_footer --image out --partition_size "$ssize" \
  --partition_name system --salt $salt --hash_algorithm sha256 --do_not_generate_fec --algorithm SHA256_RSA4096 --key "$keys/rsa4096.pem"
# The footed images, made once, for the steps that read them.
cp "$work/boot.src" "$work/boot.img"; cp "$work/system.src" "$work/system.img"
"$work/avbtool" add_hash_footer --image "$work/boot.img" --partition_size "$bsize" --partition_name boot --salt $salt
"$work/avbtool" add_hashtree_footer --image "$work/system.img" --partition_size "$ssize" --partition_name system \
  --salt $salt --hash_algorithm sha256 --do_not_generate_fec
step make_vbmeta_image ":" make_vbmeta_image --output out --algorithm SHA256_RSA4096 --key "$keys/rsa4096.pem" \
  --include_descriptors_from_image ../boot.img --include_descriptors_from_image ../system.img --padding_size 4096
step info_image "ln -s ../system.img img" info_image --image img --output out
