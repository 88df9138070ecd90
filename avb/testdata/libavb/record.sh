#!/bin/sh
# Records libavb's decisions (AOSP external/avb, libavb/) on what package
# internal/avbcraft makes: avb_slot_verify on every crafted image
# (slot_verify.tsv; harness.c is the bootloader) and avb_vbmeta_image_verify
# on every crafted vbmeta blob (blobs.tsv). libavb is compiled in a
# temporary directory and not kept. Needs gcc and Go.
#
#   LIBAVB=/path/to/external/avb avb/testdata/libavb/record.sh
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
gcc -O1 -std=gnu99 -DAVB_COMPILATION -I"$l" -I"$l/sha" -o "$work/harness" "$here/harness.c" \
	"$l"/avb_chain_partition_descriptor.c "$l"/avb_cmdline.c "$l"/avb_crc32.c "$l"/avb_crypto.c \
	"$l"/avb_descriptor.c "$l"/avb_footer.c "$l"/avb_hash_descriptor.c "$l"/avb_hashtree_descriptor.c \
	"$l"/avb_kernel_cmdline_descriptor.c "$l"/avb_property_descriptor.c "$l"/avb_rsa.c "$l"/avb_slot_verify.c \
	"$l"/avb_util.c "$l"/avb_vbmeta_image.c "$l"/avb_version.c "$l"/avb_sysdeps_posix.c \
	"$l"/sha/sha256_impl.c "$l"/sha/sha512_impl.c

mkdir "$work/images" "$work/blobs"
(cd "$root" && go run ./internal/avbcraft/_mkcrafted "$keys" "$work/images") >"$work/cases"
(cd "$root" && go run ./internal/avbcraft/_mkcrafted -blobs "$keys" "$work/blobs") >"$work/blobnames"

tab=$(printf '\t')
out=$here/slot_verify.tsv
{
	echo "# libavb $rev (harness.c, record.sh) on the crafted images of internal/avbcraft: avb_vbmeta_image_verify, then avb_slot_verify locked and unlocked; key - trusts the embedded key"
	printf 'case\tpartition\timage_sha256\tkey\tvbmeta_verify\tlocked\tunlocked\n'
	while IFS="$tab" read -r name part sum; do
		for key in - keys/rsa2048.avbpubkey; do
			k=$key
			[ "$key" = - ] || k=$root/avb/testdata/vectors/$key
			set -- $("$work/harness" "$k" "$work/images/$name.img" "$part" 2>/dev/null)
			printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$part" "$sum" "$key" "$1" "$2" "$3"
		done
	done <"$work/cases"
} >"$out"

out=$here/blobs.tsv
{
	echo "# libavb $rev: avb_vbmeta_image_verify on the vbmeta blobs of internal/avbcraft (Blobs)"
	printf 'name\tsha256\tresult\n'
	while IFS="$tab" read -r name file sum; do
		printf '%s\t%s\t%s\n' "$name" "$sum" "$("$work/harness" --blobs "$work/blobs/$file" 2>/dev/null)"
	done <"$work/blobnames"
} >"$out"
echo "wrote $here/slot_verify.tsv and $out"
