#!/bin/sh
# Records libavb's avb_slot_verify (AOSP external/avb, libavb/) on the
# device sets of avb's slotCases (the avbtool 1.3.0 device set of
# ../vectors2, damaged one piece at a time): slot_harness.c is a
# bootloader whose partitions are the set's files, requesting boot.
# libavb is compiled in a temporary directory and not kept. Needs gcc and Go.
#
#   LIBAVB=/path/to/external/avb avb/testdata/libavb/record_slots.sh
#
# Without LIBAVB, libavb is taken from the git repository $LIBAVB_GIT at
# $LIBAVB_REF (default: the LineageOS mirror of external/avb, lineage-21.0,
# whose avbtool.py is avbtool 1.3.0).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
keys=$root/avb/testdata/vectors/keys
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
if [ -n "${LIBAVB:-}" ]; then
	src=$LIBAVB
	rev="$(git -C "$src" rev-parse HEAD 2>/dev/null || echo unknown)"
else
	git=${LIBAVB_GIT:-/work/.mirror/LineageOS+android_external_avb/repo}
	ref=${LIBAVB_REF:-lineage-21.0}
	mkdir "$work/src"
	git -C "$git" archive "$ref" libavb | tar x -C "$work/src"
	src=$work/src
	rev="$(git -C "$git" rev-parse "$ref")"
fi
l=$src/libavb
gcc -O1 -std=gnu99 -DAVB_COMPILATION -I"$l" -I"$l/sha" -o "$work/slot_harness" "$here/slot_harness.c" \
	"$l"/avb_chain_partition_descriptor.c "$l"/avb_cmdline.c "$l"/avb_crc32.c "$l"/avb_crypto.c \
	"$l"/avb_descriptor.c "$l"/avb_footer.c "$l"/avb_hash_descriptor.c "$l"/avb_hashtree_descriptor.c \
	"$l"/avb_kernel_cmdline_descriptor.c "$l"/avb_property_descriptor.c "$l"/avb_rsa.c "$l"/avb_slot_verify.c \
	"$l"/avb_util.c "$l"/avb_vbmeta_image.c "$l"/avb_version.c "$l"/avb_sysdeps_posix.c \
	"$l"/sha/sha256_impl.c "$l"/sha/sha512_impl.c

mkdir "$work/sets"
(cd "$root" && VERITYTREE_RECORD_SLOT_SETS="$work/sets" go test ./avb -run '^TestVerifySlotIsLibavbs$' -count=1 >/dev/null)

tab=$(printf '\t')
out=$here/slot_sets.tsv
{
	echo "# libavb $rev (slot_harness.c, record_slots.sh) on the device sets of avb's slotCases: avb_slot_verify locked and unlocked, requesting boot, and the sha256 androidboot.vbmeta.digest; key - trusts the embedded key; rollback: the stored indexes, 0 elsewhere"
	printf 'case\tkey\trollback\tlocked\tunlocked\tvbmeta_digest\n'
	while IFS="$tab" read -r name key rollback; do
		k=$key
		[ "$key" = - ] || k=$keys/$key
		# shellcheck disable=SC2086
		set -- $("$work/slot_harness" "$k" "$work/sets/$name" boot $rollback 2>/dev/null)
		printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$key" "$rollback" "$1" "$2" "$3"
	done <"$work/sets/cases.tsv"
} >"$out"
echo "wrote $out"
