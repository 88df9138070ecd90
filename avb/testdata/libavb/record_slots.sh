#!/bin/sh
# Records libavb's avb_slot_verify (AOSP external/avb, libavb/) on the
# device sets of avb's slotCases (the avbtool 1.3.0 device set of
# ../vectors2, damaged one piece at a time): slot_harness.c is a
# bootloader whose partitions are the set's files, requesting boot
# (slot_sets.tsv); and on the A/B sets of avb's abCases, with their A/B
# suffix, requested partitions and persistent values (slot_ab_sets.tsv),
# after checking that avbtool 1.3.0 makes abSet's intact set byte for
# byte; and, with slot_harness.c's mode=N form, what avb_slot_verify
# gives the bootloader (result, slot data, loaded partitions, kernel
# command line) on all of these and on the sets of avb's bootSetCases
# (slot_boot.tsv). libavb is compiled in a temporary directory and not kept. Needs
# gcc, Go and python3.
#
#   LIBAVB=/path/to/external/avb avb/testdata/libavb/record_slots.sh
#
# Without LIBAVB, libavb is taken from the git repository $LIBAVB_GIT at
# $LIBAVB_REF (default: the LineageOS mirror of external/avb, lineage-21.0,
# whose avbtool.py is avbtool 1.3.0). avbtool.py is taken from the same
# tree (AVBTOOL=/path/to/avbtool.py to use another).
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
	git -C "$git" archive "$ref" libavb avbtool.py | tar x -C "$work/src"
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

mkdir -p "$work/sets/boot"
(cd "$root" && VERITYTREE_RECORD_SLOT_SETS="$work/sets" go test ./avb -run '^(TestVerifySlot(AB)?IsLibavbs|TestSlotBootIsLibavbs)$' -count=1 >"$work/go-test.log") ||
	{ cat "$work/go-test.log"; exit 1; }

# abSet's intact set, made by avbtool 1.3.0 with the same inputs and
# arguments: it must be the same, file by file.
avbtool=${AVBTOOL:-$src/avbtool.py}
a=$work/avbtool-ab
mkdir "$a"
rep() { python3 -c 'import sys; sys.stdout.buffer.write(sys.argv[1].encode().replace(b"\\n", b"\n") * int(sys.argv[2]))' "$1" "$2" >"$a/$3"; }
rep 'a boot image\n' 1500 boot_a.img
rep 'vendor boot\n' 1000 vendor_boot.img
rep 'factory data\n' 800 factory.img
rep 'system files 0\n' 16384 system_a.img
rep 'customizations\n' 4096 cust.img
av() { python3 "$avbtool" "$@"; }
av add_hash_footer --image "$a/boot_a.img" --partition_size 131072 --partition_name boot --salt b0b0b0b0
av add_hash_footer --image "$a/vendor_boot.img" --partition_size 131072 --partition_name vendor_boot --salt 7e7e7e7e --do_not_use_ab
av add_hash_footer --image "$a/factory.img" --partition_size 131072 --partition_name factory --use_persistent_digest --do_not_use_ab
av add_hashtree_footer --image "$a/system_a.img" --partition_size 1048576 --partition_name system --salt 5151 --do_not_generate_fec
av add_hashtree_footer --image "$a/cust.img" --partition_size 524288 --partition_name cust --salt c0c0 --do_not_generate_fec \
	--use_persistent_digest --do_not_use_ab
av make_vbmeta_image --output "$a/vbmeta_system_a.img" --algorithm SHA256_RSA2048 --key "$keys/rsa2048.pem" \
	--include_descriptors_from_image "$a/system_a.img" --rollback_index 4 --rollback_index_location 1 --padding_size 4096
av make_vbmeta_image --output "$a/vbmeta_vendor.img" --algorithm SHA256_RSA2048 --key "$keys/rsa2048.pem" \
	--include_descriptors_from_image "$a/cust.img" --rollback_index 2 --rollback_index_location 2 --padding_size 4096
av make_vbmeta_image --output "$a/vbmeta_a.img" --algorithm SHA256_RSA4096 --key "$keys/rsa4096.pem" \
	--include_descriptors_from_image "$a/boot_a.img" --include_descriptors_from_image "$a/vendor_boot.img" \
	--include_descriptors_from_image "$a/factory.img" --chain_partition "vbmeta_system:1:$keys/rsa2048.avbpubkey" \
	--chain_partition_do_not_use_ab "vbmeta_vendor:2:$keys/rsa2048.avbpubkey" --rollback_index 9 --padding_size 4096
for f in "$a"/*; do
	cmp "$f" "$work/sets/ab-base/$(basename "$f")"
done
[ "$(ls "$a" | wc -l)" = "$(ls "$work/sets/ab-base" | wc -l)" ]

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

out=$here/slot_ab_sets.tsv
{
	echo "# libavb $rev (slot_harness.c, record_slots.sh) on the A/B device sets of avb's abCases (the intact one made by avbtool 1.3.0 too, byte for byte): avb_slot_verify locked and unlocked with the suffix (- for none), requesting the partitions given, the device holding the persistent values given (NAME:HEX, - for none); the sha256 androidboot.vbmeta.digest; the values the locked run wrote"
	printf 'case\tsuffix\trequested\tvalues\tlocked\tunlocked\tvbmeta_digest\twritten\n'
	while IFS="$tab" read -r name suffix requested values; do
		# shellcheck disable=SC2086
		set -- $("$work/slot_harness" - "$work/sets/ab/$name" "$requested" "$suffix" $values 2>/dev/null)
		printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$suffix" "$requested" "$values" "$1" "$2" "$3" "$4"
	done <"$work/sets/ab/cases.tsv"
} >"$out"
echo "wrote $out"

out=$here/slot_boot.tsv
{
	echo "# libavb $rev (slot_harness.c mode=N, record_slots.sh) on the sets of avb's slotCases (slot/), abCases (ab/) and bootSetCases (boot/): what avb_slot_verify returned locked and unlocked with the hashtree error mode (AvbHashtreeErrorMode), requesting the partitions of slot_sets.tsv and slot_ab_sets.tsv (or the case's), a partition's GUID made of its name (slot_harness.c guid_of): its result, whether it returned slot data, its loaded partitions (NAME:SIZE:RESULT) and its kernel command line"
	printf 'case\tmode\tstate\tresult\tdata\tloaded\tcmdline\n'
	while IFS="$tab" read -r name key set requested suffix mode args; do
		k=$key
		[ "$key" = - ] || k=$keys/$key
		# shellcheck disable=SC2086
		"$work/slot_harness" "$k" "$work/sets/$set" "$requested" "$suffix" "mode=$mode" $args >"$work/boot.out" 2>/dev/null
		while read -r state result data loaded && IFS= read -r cmdline; do
			printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$mode" "$state" "$result" "$data" "$loaded" "$cmdline"
		done <"$work/boot.out"
	done <"$work/sets/boot/cases.tsv"
} >"$out"
echo "wrote $out"
