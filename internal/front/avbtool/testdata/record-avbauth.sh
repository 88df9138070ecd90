#!/bin/sh
# Records the real avbtool's answers on the crafted images of
# internal/avbcraft (the AVB trust tests) into avbauth.tsv and avbauth/:
# verify_image (with and without --key), erase_footer (and
# --keep_hashtree) and a rerun of add_hashtree_footer, each on a fresh copy
# of the image named PARTITION.img. Run it from anywhere inside the
# repository when avbtool 1.3.0 is at hand:
#
#   AVBTOOL=/path/to/avbtool.py internal/front/avbtool/testdata/record-avbauth.sh
#
# ($AVBTOOL defaults to /tmp/avbtool/avbtool.py). avbtool is copied into
# the work directory and run as "python3 avbtool.py", so that its messages
# start with "avbtool.py:" as in the other recordings; its code is not
# kept. The images are made again by the tests, byte for byte (their
# SHA-256 is in the table).
set -eu
AVBTOOL=${AVBTOOL:-/tmp/avbtool/avbtool.py}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../../.." && pwd)
keys=$root/avb/testdata/vectors/keys
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir "$work/images" "$work/run"
cp "$AVBTOOL" "$work/run/avbtool.py"
ln -s "$keys" "$work/run/keys"
(cd "$root" && go run ./internal/avbcraft/_mkcrafted "$keys" "$work/images") >"$work/cases"
version=$(cd "$work/run" && python3 avbtool.py version)
[ "$version" = "avbtool 1.3.0" ] || { echo "want avbtool 1.3.0, $AVBTOOL is $version" >&2; exit 1; }

out=$here/avbauth.tsv
rm -rf "$here/avbauth"
mkdir "$here/avbauth"
{
	echo "# avbtool 1.3.0 on the crafted images of internal/avbcraft (made by record-avbauth.sh); output is stdout then stderr; size and sha256 are of the image after the run"
	printf 'case\timage\timage_sha256\targs\trc\toutput\tsize\tsha256\n'
} >"$out"

salt=a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5
sign="--algorithm SHA256_RSA2048 --key keys/rsa2048.pem"

# row CASE PARTITION SUM LABEL ARGS...: one run of avbtool on a fresh copy.
row() {
	name=$1 part=$2 sum=$3 label=$4
	shift 4
	rm -f "$work/run"/*.img
	cp "$work/images/$name.img" "$work/run/$part.img"
	rc=0
	(cd "$work/run" && python3 avbtool.py "$@" >"$work/stdout" 2>"$work/stderr") || rc=$?
	cat "$work/stdout" "$work/stderr" >"$here/avbauth/$name.$label.txt"
	size=$(stat -c %s "$work/run/$part.img")
	after=$(sha256sum "$work/run/$part.img" | cut -d' ' -f1)
	args=$(python3 -c 'import json, sys; print(json.dumps(sys.argv[1:]))' "$@")
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$part.img" "$sum" "$args" "$rc" "avbauth/$name.$label.txt" "$size" "$after" >>"$out"
}

while IFS="$(printf '\t')" read -r name part sum; do
	img=$part.img
	row "$name" "$part" "$sum" verify verify_image --image "$img"
	row "$name" "$part" "$sum" verify-key verify_image --image "$img" --key keys/rsa2048.pub.pem
	row "$name" "$part" "$sum" erase erase_footer --image "$img"
	[ "$part" = system ] || continue
	row "$name" "$part" "$sum" erase-keep erase_footer --image "$img" --keep_hashtree
	psize=
	case $name in
	footer-orig-unpadded | vbmeta-size-over-64k) psize="--partition_size 2097152" ;;
	esac
	case $name in
	signed | footer-orig-* | vbmeta-size-over-64k)
		# shellcheck disable=SC2086
		row "$name" "$part" "$sum" rerun add_hashtree_footer --image "$img" --partition_name system --hash_algorithm sha256 \
			--salt $salt $psize $sign --do_not_generate_fec
		;;
	unsigned | none-victim-key)
		row "$name" "$part" "$sum" rerun add_hashtree_footer --image "$img" --partition_name system --hash_algorithm sha256 \
			--salt $salt --do_not_generate_fec
		;;
	esac
done <"$work/cases"
echo "wrote $out"
