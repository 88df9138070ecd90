#!/usr/bin/env python3
"""Records avbtool's answers for the cases below into this directory.

    AVBTOOL=/path/to/avbtool.py python3 record.py

Runs `python3 $AVBTOOL ARGS` for each case, in order, in one scratch
directory that holds ../vectors/keys and ../vectors/props (as keys/, props/)
and helper.py; a case's files stay for the cases after it. Before a case its
"inputs" are written (image notation of ../vectors/README.md). Written:
cases.jsonl (one case a line: args, exit code, stdout, stderr, every file
made or changed with its size and sha256, the helper's log) and blobs/
(every such file, gzipped, named by its sha256). See README.md.
"""
import gzip, hashlib, json, os, shutil, struct, subprocess, sys, tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
AVBTOOL = os.environ['AVBTOOL']
SALT = '5eedf00d0123456789abcdeffedcba98765432100f1e2d3c4b5a69788796a5b4'
K2, K4, K8 = 'keys/rsa2048.pem', 'keys/rsa4096.pem', 'keys/rsa8192.pem'
P2, P4 = 'keys/rsa2048.avbpubkey', 'keys/rsa4096.avbpubkey'
S2 = ['--algorithm', 'SHA256_RSA2048', '--key', K2]
S4 = ['--algorithm', 'SHA256_RSA4096', '--key', K4]
BOOT = 'blockbyte:4096:4+fill:ee:100'
COMMON = ['--rollback_index', '7', '--rollback_index_location', '2', '--prop', 'com.example.a:1',
          '--prop_from_file', 'com.example.blob:props/blob.bin', '--kernel_cmdline', 'quiet loglevel=3',
          '--public_key_metadata', 'props/pkmd.bin', '--internal_release_string', 'rel 9',
          '--append_to_release_string', 'extra', '--flags', '0']


def case(name, args, inputs=None, env=None):
    return dict(name=name, args=args, inputs=inputs or {}, env=env or {})


def htf(name, extra, image, file):
    """add_hashtree_footer (sha256, SALT) on a fresh image (image None: on the file as it is)."""
    return case(name, ['add_hashtree_footer', '--image', file, '--hash_algorithm', 'sha256', '--salt', SALT] + extra,
                {file: image} if image else {})


def hf(name, extra, image=BOOT, file='boot.img'):
    """add_hash_footer on a fresh image (image None: on the file as it is)."""
    return case(name, ['add_hash_footer', '--image', file] + extra, {file: image} if image else {})


CASES = [
    # add_hash_footer
    hf('hf-psize', ['--partition_size', '131072', '--partition_name', 'boot', '--salt', SALT]),
    hf('hf-psize-rerun', ['--partition_size', '131072', '--partition_name', 'boot', '--salt', SALT], image=None),
    hf('hf-dynamic', ['--dynamic_partition_size', '--partition_name', 'boot', '--salt', SALT]),
    hf('hf-dynamic-rerun', ['--dynamic_partition_size', '--partition_name', 'boot', '--salt', SALT], image=None),
    hf('hf-aligned', ['--partition_size', '131072', '--partition_name', 'dtbo', '--salt', SALT], image='blockbyte:4096:3'),
    hf('hf-empty-salt', ['--partition_size', '131072', '--partition_name', 'boot', '--salt', '']),
    hf('hf-sha1', ['--partition_size', '131072', '--partition_name', 'boot', '--hash_algorithm', 'sha1', '--salt', SALT]),
    hf('hf-sha512', ['--partition_size', '131072', '--partition_name', 'boot', '--hash_algorithm', 'sha512', '--salt', SALT]),
    hf('hf-persistent', ['--partition_size', '131072', '--partition_name', 'boot', '--use_persistent_digest']),
    hf('hf-do-not-use-ab', ['--partition_size', '131072', '--partition_name', 'boot', '--salt', SALT, '--do_not_use_ab']),
    hf('hf-signed', ['--partition_size', '131072', '--partition_name', 'boot', '--salt', SALT] + S4 + COMMON),
    hf('hf-signed-rerun', ['--partition_size', '131072', '--partition_name', 'boot', '--salt', SALT] + S4 + COMMON, image=None),
    hf('hf-chain', ['--partition_size', '131072', '--partition_name', 'boot', '--salt', SALT,
                    '--chain_partition', 'vendor_boot:3:' + P2, '--chain_partition_do_not_use_ab', 'pvmfw:4:' + P4] + S2),
    hf('hf-hashtree-disabled', ['--partition_size', '131072', '--partition_name', 'boot', '--salt', SALT, '--set_hashtree_disabled_flag']),
    hf('hf-output-vbmeta', ['--partition_size', '131072', '--partition_name', 'boot', '--salt', SALT, '--output_vbmeta_image', 'boot.vbmeta'] + S2),
    hf('hf-do-not-append', ['--partition_size', '131072', '--partition_name', 'boot', '--salt', SALT,
                            '--do_not_append_vbmeta_image', '--output_vbmeta_image', 'boot.vbmeta'] + S2),
    hf('hf-signed-then-do-not-append', ['--partition_size', '131072', '--partition_name', 'boot', '--salt', SALT,
                                        '--do_not_append_vbmeta_image', '--output_vbmeta_image', 'boot.vbmeta'], image=None),
    hf('hf-no-psize', ['--partition_name', 'boot', '--salt', SALT, '--do_not_append_vbmeta_image', '--output_vbmeta_image', 'boot.vbmeta']),
    case('hf-calc-max', ['add_hash_footer', '--partition_size', '131072', '--calc_max_image_size']),
    case('hf-calc-max-small', ['add_hash_footer', '--partition_size', '65536', '--calc_max_image_size']),
    case('hf-calc-max-big', ['add_hash_footer', '--partition_size', '104857600', '--calc_max_image_size']),
    case('hf-print-version', ['add_hash_footer', '--partition_size', '65536', '--rollback_index_location', '2', '--print_required_libavb_version']),
    case('hf-print-version-0', ['add_hash_footer', '--partition_size', '65536', '--print_required_libavb_version']),
    case('hf-print-version-noab', ['add_hash_footer', '--partition_size', '65536', '--do_not_use_ab', '--print_required_libavb_version']),
    hf('hf-err-too-small', ['--partition_size', '16384', '--partition_name', 'boot', '--salt', SALT]),
    hf('hf-err-unaligned-psize', ['--partition_size', '131073', '--partition_name', 'boot', '--salt', SALT]),
    hf('hf-err-no-size', ['--partition_name', 'boot', '--salt', SALT]),
    hf('hf-err-hash', ['--partition_size', '131072', '--partition_name', 'boot', '--salt', SALT, '--hash_algorithm', 'nohash']),
    hf('hf-err-key-size', ['--partition_size', '131072', '--partition_name', 'boot', '--salt', SALT, '--algorithm', 'SHA256_RSA4096', '--key', K2]),
    hf('hf-err-no-key', ['--partition_size', '131072', '--partition_name', 'boot', '--salt', SALT, '--algorithm', 'SHA256_RSA4096']),
    hf('hf-err-alg', ['--partition_size', '131072', '--partition_name', 'boot', '--salt', SALT, '--algorithm', 'SHA256_RSA1024', '--key', K2]),
    hf('hf-err-salt', ['--partition_size', '131072', '--partition_name', 'boot', '--salt', 'xyz']),
    hf('hf-err-chain', ['--partition_size', '131072', '--partition_name', 'boot', '--salt', SALT, '--chain_partition', 'a:1']),
    hf('hf-sparse', ['--partition_size', '131072', '--partition_name', 'boot', '--salt', SALT] + S2,
       image='simg:blockbyte:4096:8+zero:16384+fill:01:5000', file='sparse.img'),
    hf('hf-sparse-rerun', ['--partition_size', '131072', '--partition_name', 'boot', '--salt', SALT] + S2, image=None, file='sparse.img'),
    # Images for what follows: a hash footer image, hashtree footer images.
    hf('boot-signed', ['--partition_size', '131072', '--partition_name', 'boot', '--salt', SALT] + S4),
    case('system-hashtree', ['add_hashtree_footer', '--image', 'system.img', '--partition_size', '262144', '--partition_name', 'system',
                             '--do_not_generate_fec', '--hash_algorithm', 'sha256', '--salt', SALT] + S2,
         {'system.img': 'blockbyte:4096:40'}),
    case('vendor-hashtree', ['add_hashtree_footer', '--image', 'vendor.img', '--partition_size', '196608', '--partition_name', 'vendor',
                             '--do_not_generate_fec', '--hash_algorithm', 'sha256', '--salt', SALT, '--rollback_index_location', '1',
                             '--check_at_most_once'],
         {'vendor.img': 'blockbyte:4096:20+fill:55:4096'}),
    # make_vbmeta_image
    case('mv-none', ['make_vbmeta_image', '--output', 'mv.img']),
    case('mv-signed', ['make_vbmeta_image', '--output', 'mv.img'] + S4 + ['--rollback_index', '3']),
    case('mv-rsa8192', ['make_vbmeta_image', '--output', 'mv.img', '--algorithm', 'SHA512_RSA8192', '--key', K8]),
    case('mv-common', ['make_vbmeta_image', '--output', 'mv.img'] + S2 + COMMON),
    case('mv-chain', ['make_vbmeta_image', '--output', 'mv.img', '--chain_partition', 'system:2:' + P2,
                      '--chain_partition', 'boot:1:' + P4] + S4),
    case('mv-chain-noab', ['make_vbmeta_image', '--output', 'mv.img', '--chain_partition_do_not_use_ab', 'pvmfw:3:' + P2,
                           '--chain_partition', 'boot:1:' + P4, '--chain_partition_do_not_use_ab', 'misc:2:' + P2] + S4),
    case('mv-include-footer', ['make_vbmeta_image', '--output', 'mv.img', '--include_descriptors_from_image', 'boot.img',
                               '--include_descriptors_from_image', 'system.img', '--include_descriptors_from_image', 'vendor.img'] + S4),
    case('mv-include-vbmeta', ['make_vbmeta_image', '--output', 'mv2.img', '--include_descriptors_from_image', 'mv.img',
                               '--include_descriptors_from_image', 'hf.vbmeta'] + S2,
         {'hf.vbmeta': 'case:hf-do-not-append:boot.vbmeta'}),
    case('mv-include-dup', ['make_vbmeta_image', '--output', 'mv.img', '--include_descriptors_from_image', 'system.img',
                            '--include_descriptors_from_image', 'boot.img', '--include_descriptors_from_image', 'mv2.img',
                            '--include_descriptors_from_image', 'boot.img']),
    case('mv-order', ['make_vbmeta_image', '--output', 'mv.img', '--include_descriptors_from_image', 'vendor.img',
                      '--kernel_cmdline', 'first', '--include_descriptors_from_image', 'boot.img',
                      '--chain_partition_do_not_use_ab', 'pvmfw:4:' + P2, '--prop', 'k:v', '--setup_rootfs_from_kernel', 'system.img',
                      '--chain_partition', 'vbmeta_system:3:' + P2, '--prop_from_file', 'f:props/text.txt',
                      '--kernel_cmdline', 'second'] + S4),
    case('mv-rootfs', ['make_vbmeta_image', '--output', 'mv.img', '--setup_rootfs_from_kernel', 'system.img']),
    case('mv-padding', ['make_vbmeta_image', '--output', 'mv.img', '--padding_size', '4096'] + S2),
    case('mv-padding-odd', ['make_vbmeta_image', '--output', 'mv.img', '--padding_size', '1000'] + S2),
    case('mv-padding-exact', ['make_vbmeta_image', '--output', 'mv.img', '--padding_size', '64']),
    case('mv-hashtree-disabled', ['make_vbmeta_image', '--output', 'mv.img', '--set_hashtree_disabled_flag']),
    case('mv-flags', ['make_vbmeta_image', '--output', 'mv.img', '--flags', '2']),
    case('mv-flags-both', ['make_vbmeta_image', '--output', 'mv.img', '--flags', '3', '--set_hashtree_disabled_flag']),
    case('mv-flags-hex', ['make_vbmeta_image', '--output', 'mv.img', '--flags', '0x10', '--rollback_index', '0x20']),
    case('mv-print-version', ['make_vbmeta_image', '--print_required_libavb_version']),
    case('mv-print-version-location', ['make_vbmeta_image', '--rollback_index_location', '1', '--print_required_libavb_version']),
    case('mv-print-version-noab', ['make_vbmeta_image', '--chain_partition_do_not_use_ab', 'a:1:' + P2, '--print_required_libavb_version']),
    case('mv-print-version-include', ['make_vbmeta_image', '--include_descriptors_from_image', 'vendor.img', '--print_required_libavb_version']),
    case('mv-print-version-output', ['make_vbmeta_image', '--output', 'pv.img', '--print_required_libavb_version']),
    case('mv-err-no-output', ['make_vbmeta_image'] + S2),
    case('mv-err-chain-malformed', ['make_vbmeta_image', '--output', 'err.img', '--chain_partition', 'boot:1']),
    case('mv-err-chain-location-0', ['make_vbmeta_image', '--output', 'err.img', '--chain_partition', 'boot:0:' + P2]),
    case('mv-err-chain-location-used', ['make_vbmeta_image', '--output', 'err.img', '--chain_partition', 'boot:1:' + P2,
                                        '--chain_partition', 'system:1:' + P2]),
    case('mv-err-chain-location-main', ['make_vbmeta_image', '--output', 'err.img', '--rollback_index_location', '2',
                                        '--chain_partition', 'boot:2:' + P2]),
    case('mv-err-chain-key-missing', ['make_vbmeta_image', '--output', 'err.img', '--chain_partition', 'boot:1:keys/none.avbpubkey']),
    case('mv-err-alg', ['make_vbmeta_image', '--output', 'err.img', '--algorithm', 'SHA1_RSA1024', '--key', K2]),
    case('mv-err-no-key', ['make_vbmeta_image', '--output', 'err.img', '--algorithm', 'SHA256_RSA2048']),
    case('mv-err-key-size', ['make_vbmeta_image', '--output', 'err.img', '--algorithm', 'SHA512_RSA4096', '--key', K2]),
    case('mv-err-prop', ['make_vbmeta_image', '--output', 'err.img', '--prop', 'novalue']),
    case('mv-err-include-missing', ['make_vbmeta_image', '--output', 'err.img', '--include_descriptors_from_image', 'none.img']),
    case('mv-err-include-not-avb', ['make_vbmeta_image', '--output', 'err.img', '--include_descriptors_from_image', 'props/text.txt']),
    case('mv-err-flags', ['make_vbmeta_image', '--output', 'err.img', '--flags', 'x']),
    case('mv-err-padding', ['make_vbmeta_image', '--output', 'err.img', '--padding_size', 'x']),
    # --signing_helper, --signing_helper_with_files
    case('sh-stdin', ['make_vbmeta_image', '--output', 'sh.img', '--signing_helper', './helper.py'] + S2),
    case('sh-stdin-pubkey', ['make_vbmeta_image', '--output', 'sh.img', '--signing_helper', './helper.py',
                             '--algorithm', 'SHA512_RSA4096', '--key', 'keys/rsa4096.pub.pem']),
    case('sh-files', ['make_vbmeta_image', '--output', 'sh.img', '--signing_helper_with_files', './helper.py'] + S2),
    case('sh-both', ['make_vbmeta_image', '--output', 'sh.img', '--signing_helper', './nonexistent',
                     '--signing_helper_with_files', './helper.py'] + S4),
    case('sh-fail', ['make_vbmeta_image', '--output', 'sh.img', '--signing_helper', './helper.py'] + S2, env={'HELPER_MODE': 'fail'}),
    case('sh-fail-files', ['make_vbmeta_image', '--output', 'sh.img', '--signing_helper_with_files', './helper.py'] + S2,
         env={'HELPER_MODE': 'fail'}),
    case('sh-short', ['make_vbmeta_image', '--output', 'sh.img', '--signing_helper', './helper.py'] + S2, env={'HELPER_MODE': 'short'}),
    case('sh-long', ['make_vbmeta_image', '--output', 'sh.img', '--signing_helper', './helper.py'] + S2, env={'HELPER_MODE': 'long'}),
    case('sh-short-files', ['make_vbmeta_image', '--output', 'sh.img', '--signing_helper_with_files', './helper.py'] + S2,
         env={'HELPER_MODE': 'short'}),
    case('sh-key-size', ['make_vbmeta_image', '--output', 'sh.img', '--signing_helper', './helper.py',
                         '--algorithm', 'SHA256_RSA4096', '--key', K2]),
    hf('sh-hash-footer', ['--partition_size', '131072', '--partition_name', 'boot', '--salt', SALT, '--signing_helper', './helper.py'] + S2),
    case('sh-hashtree-footer', ['add_hashtree_footer', '--image', 'sh.img', '--partition_size', '262144', '--partition_name', 'system',
                                '--do_not_generate_fec', '--salt', SALT, '--signing_helper_with_files', './helper.py'] + S2,
         {'sh.img': 'blockbyte:4096:8'}),
    # extract_vbmeta_image
    case('ev-boot', ['extract_vbmeta_image', '--image', 'boot.img', '--output', 'ev.img']),
    case('ev-boot-padded', ['extract_vbmeta_image', '--image', 'boot.img', '--output', 'ev.img', '--padding_size', '4096']),
    case('ev-system-padded-odd', ['extract_vbmeta_image', '--image', 'system.img', '--output', 'ev.img', '--padding_size', '1000']),
    case('ev-sparse', ['extract_vbmeta_image', '--image', 'sparse.img', '--output', 'ev.img']),
    case('ev-err-no-footer', ['extract_vbmeta_image', '--image', 'mv.img', '--output', 'ev.img']),
    # append_vbmeta_image
    case('av-boot', ['append_vbmeta_image', '--image', 'av.img', '--partition_size', '131072', '--vbmeta_image', 'mv2.img'],
         {'av.img': BOOT}),
    case('av-rerun', ['append_vbmeta_image', '--image', 'av.img', '--partition_size', '131072', '--vbmeta_image', 'mv2.img']),
    case('av-err-unaligned', ['append_vbmeta_image', '--image', 'av.img', '--partition_size', '131000', '--vbmeta_image', 'mv2.img'],
         {'av.img': BOOT}),
    case('av-err-too-small', ['append_vbmeta_image', '--image', 'av.img', '--partition_size', '16384', '--vbmeta_image', 'mv2.img'],
         {'av.img': BOOT}),
    # resize_image, zero_hashtree
    case('ri-grow', ['resize_image', '--image', 'ri.img', '--partition_size', '196608'], {'ri.img': 'copy:boot.img'}),
    case('ri-shrink', ['resize_image', '--image', 'ri.img', '--partition_size', '98304']),
    case('ri-err-too-small', ['resize_image', '--image', 'ri.img', '--partition_size', '20480']),
    case('ri-err-unaligned', ['resize_image', '--image', 'ri.img', '--partition_size', '50000']),
    case('ri-hashtree', ['resize_image', '--image', 'rh.img', '--partition_size', '327680'], {'rh.img': 'copy:system.img'}),
    case('ri-err-no-footer', ['resize_image', '--image', 'mv.img', '--partition_size', '65536']),
    case('zh-system', ['zero_hashtree', '--image', 'zh.img'], {'zh.img': 'copy:system.img'}),
    case('zh-err-hash-image', ['zero_hashtree', '--image', 'boot.img']),
    # calculate_vbmeta_digest, print_partition_digests on what is above
    case('cd-boot', ['calculate_vbmeta_digest', '--image', 'boot.img']),
    case('cd-boot-sha1', ['calculate_vbmeta_digest', '--image', 'boot.img', '--hash_algorithm', 'sha1']),
    case('cd-sparse', ['calculate_vbmeta_digest', '--image', 'sparse.img']),
    case('cd-mv', ['calculate_vbmeta_digest', '--image', 'mv2.img', '--hash_algorithm', 'sha512']),
    case('pd-boot', ['print_partition_digests', '--image', 'boot.img']),
    case('pd-boot-json', ['print_partition_digests', '--image', 'boot.img', '--json']),
    case('pd-mv', ['print_partition_digests', '--image', 'mv2.img']),
    case('pd-mv-json', ['print_partition_digests', '--image', 'mv2.img', '--json']),
    hf('hf-odd-name', ['--partition_size', '131072', '--partition_name', 'b\u00f6\u00f6t "\\ \U0001f600\x7f', '--salt', SALT],
       file='odd.img'),
    case('pd-odd-name', ['print_partition_digests', '--image', 'odd.img']),
    case('pd-odd-name-json', ['print_partition_digests', '--image', 'odd.img', '--json']),
    case('pd-none', ['print_partition_digests', '--image', 'sh.img', '--json']),
    # info_image of each kind
    case('info-hash-footer', ['info_image', '--image', 'boot.img']),
    case('info-hf-signed', ['info_image', '--image', 'hf-signed.img'], {'hf-signed.img': 'case:hf-signed:boot.img'}),
    case('info-hf-chain', ['info_image', '--image', 'hf-chain.img'], {'hf-chain.img': 'case:hf-chain:boot.img'}),
    case('info-persistent', ['info_image', '--image', 'hf-persistent.img'], {'hf-persistent.img': 'case:hf-persistent:boot.img'}),
    case('info-vbmeta-include', ['info_image', '--image', 'mv2.img']),
    case('info-vbmeta-order', ['info_image', '--image', 'mv-order.img'], {'mv-order.img': 'case:mv-order:mv.img'}),
    case('info-sparse', ['info_image', '--image', 'sparse.img']),
    case('info-zeroed', ['info_image', '--image', 'zh.img']),
    case('info-appended', ['info_image', '--image', 'av.img'], {'av.img': 'case:av-rerun:av.img'}),
    case('info-resized', ['info_image', '--image', 'rh.img']),
    # A device's set, made with avbtool only.
    case('dev-boot', ['add_hash_footer', '--image', 'dev/boot.img', '--partition_size', '131072', '--partition_name', 'boot',
                      '--salt', SALT, '--prop', 'com.android.build.boot.os_version:14'] + S4,
         {'dev/boot.img': 'blockbyte:4096:5+fill:42:1000'}),
    case('dev-system', ['add_hashtree_footer', '--image', 'dev/system.img', '--partition_size', '262144', '--partition_name', 'system',
                        '--do_not_generate_fec', '--hash_algorithm', 'sha256', '--salt', SALT, '--prop', 'com.android.build.system.os_version:14'],
         {'dev/system.img': 'blockbyte:4096:32'}),
    case('dev-vendor', ['add_hashtree_footer', '--image', 'dev/vendor.img', '--partition_size', '196608', '--partition_name', 'vendor',
                        '--do_not_generate_fec', '--hash_algorithm', 'sha256', '--salt', SALT],
         {'dev/vendor.img': 'fill:a5:40960'}),
    case('dev-vbmeta-system', ['make_vbmeta_image', '--output', 'dev/vbmeta_system.img', '--include_descriptors_from_image', 'dev/system.img',
                               '--rollback_index', '4', '--rollback_index_location', '1', '--padding_size', '4096'] + S2),
    case('dev-vbmeta', ['make_vbmeta_image', '--output', 'dev/vbmeta.img', '--include_descriptors_from_image', 'dev/boot.img',
                        '--include_descriptors_from_image', 'dev/vendor.img', '--chain_partition', 'vbmeta_system:1:' + P2,
                        '--rollback_index', '9', '--padding_size', '4096'] + S4),
    case('dev-digest', ['calculate_vbmeta_digest', '--image', 'dev/vbmeta.img']),
    case('dev-digests', ['print_partition_digests', '--image', 'dev/vbmeta.img']),
    case('dev-digests-json', ['print_partition_digests', '--image', 'dev/vbmeta.img', '--json']),
    case('dev-info', ['info_image', '--image', 'dev/vbmeta.img']),
    case('dev-verify', ['verify_image', '--image', 'dev/vbmeta.img', '--follow_chain_partitions', '--key', 'keys/rsa4096.pub.pem']),
    case('dev-verify-key', ['verify_image', '--image', 'dev/vbmeta.img', '--key', 'keys/rsa4096.pub.pem']),
    case('dev-verify-expected', ['verify_image', '--image', 'dev/vbmeta.img', '--expected_chain_partition', 'vbmeta_system:1:' + P2]),
    case('dev-verify-expected-wrong', ['verify_image', '--image', 'dev/vbmeta.img', '--expected_chain_partition', 'vbmeta_system:1:' + P4]),
    case('dev-zero-vendor', ['zero_hashtree', '--image', 'dev/vendor.img']),
    case('dev-verify-zeroed-refused', ['verify_image', '--image', 'dev/vbmeta.img', '--follow_chain_partitions']),
    case('dev-verify-zeroed-accepted', ['verify_image', '--image', 'dev/vbmeta.img', '--follow_chain_partitions', '--accept_zeroed_hashtree']),
    # Chained partitions keep the order given (those without A/B last), not sorted
    case('ht-chains-order', ['add_hashtree_footer', '--image', 'htc.img', '--partition_size', '262144', '--partition_name', 'system',
                             '--do_not_generate_fec', '--salt', SALT, '--chain_partition', 'vendor_boot:3:' + P2,
                             '--chain_partition_do_not_use_ab', 'abl:5:' + P2, '--chain_partition', 'boot:2:' + P4] + S2,
         {'htc.img': 'blockbyte:4096:8'}),
    hf('hf-chains-order', ['--partition_size', '131072', '--partition_name', 'boot', '--salt', SALT,
                           '--chain_partition_do_not_use_ab', 'pvmfw:4:' + P4, '--chain_partition', 'vendor_boot:3:' + P2,
                           '--chain_partition', 'boot_a:2:' + P2], file='hfc.img'),
    # resize_image and zero_hashtree of Android sparse images (added last, so that the cases above stay as
    # they were): avbtool's footer layout (rs.img: the vbmeta in a chunk of its own), and img2simg's of raw
    # footer images (the cut inside a chunk).
    case('ri-sparse-grow', ['resize_image', '--image', 'rs.img', '--partition_size', '196608'], {'rs.img': 'copy:sparse.img'}),
    case('ri-sparse-shrink', ['resize_image', '--image', 'rs.img', '--partition_size', '98304']),
    case('ri-sparse-same', ['resize_image', '--image', 'rs.img', '--partition_size', '98304']),
    case('ri-sparse-err-too-small', ['resize_image', '--image', 'rs.img', '--partition_size', '45056']),
    case('ri-sparse-img2simg', ['resize_image', '--image', 'rm.img', '--partition_size', '196608'], {'rm.img': 'simg:copy:boot.img'}),
    case('ri-sparse-img2simg-shrink', ['resize_image', '--image', 'rm2.img', '--partition_size', '65536'], {'rm2.img': 'simg:copy:boot.img'}),
    case('zh-sparse-hashtree', ['add_hashtree_footer', '--image', 'zs.img', '--partition_size', '262144', '--partition_name', 'system',
                                '--do_not_generate_fec', '--hash_algorithm', 'sha256', '--salt', SALT] + S2,
         {'zs.img': 'simg:blockbyte:4096:30+zero:8192+fill:07:4096'}),
    case('zh-sparse', ['zero_hashtree', '--image', 'zs.img']),
    case('zh-sparse-rerun', ['zero_hashtree', '--image', 'zs.img']),
    case('zh-sparse-img2simg', ['zero_hashtree', '--image', 'zi.img'], {'zi.img': 'simg:copy:system.img'}),
    case('zh-sparse-one-block-tree', ['zero_hashtree', '--image', 'z1.img'], {'z1.img': 'simg:copy:sh.img'}),
    case('info-sparse-zeroed', ['info_image', '--image', 'zs.img']),
    case('info-sparse-resized', ['info_image', '--image', 'rs.img']),
    # zero_hashtree with FEC: the inputs are made by avbtool's add_hashtree_footer --fec_num_roots 2 (with
    # AOSP's `fec`, see fecprep).
    case('zh-sparse-fec', ['zero_hashtree', '--image', 'zf.img'],
         {'zf.img': 'fecprep:262144:simg:blockbyte:4096:30+zero:8192+fill:07:4096'}),
    case('zh-fec', ['zero_hashtree', '--image', 'zr.img'], {'zr.img': 'fecprep:262144:blockbyte:4096:30+fill:07:4096'}),
    case('info-sparse-zeroed-fec', ['info_image', '--image', 'zf.img']),
    # Sparse images of 1024-byte blocks (img2simg's third argument): avbtool then works in those blocks.
    case('ri-sparse-1k', ['resize_image', '--image', 'r1k.img', '--partition_size', '197632'], {'r1k.img': 'simg1024:copy:boot.img'}),
    case('ri-sparse-1k-shrink', ['resize_image', '--image', 'r1k.img', '--partition_size', '41984']),
    case('zh-sparse-1k', ['zero_hashtree', '--image', 'z1k.img'], {'z1k.img': 'simg1024:copy:system.img'}),
    # add_hashtree_footer with FEC (avbtool's default), the parity made by AOSP's `fec` (added last, the
    # cases above unchanged). In fec/, each image named after its partition (verify_image reads P.img).
    htf('fec-few', ['--partition_size', '1048576', '--partition_name', 'few'], 'blockbyte:4096:5', 'fec/few.img'),
    htf('fec-few-rerun', ['--partition_size', '1048576', '--partition_name', 'few'], None, 'fec/few.img'),
    # 501 blocks and their 5-block tree: 506 = 2 x 253, whole rounds of RS(255, 253).
    htf('fec-roots2-whole-rounds', ['--partition_size', '4194304', '--partition_name', 'il', '--fec_num_roots', '2', '--block_size', '4096'],
        'blockbyte:4096:501', 'fec/il.img'),
    htf('fec-roots8-unaligned', ['--partition_size', '2097152', '--partition_name', 'r8', '--fec_num_roots', '8'] + S2,
        'blockbyte:4096:300+fill:a5:1234', 'fec/r8.img'),
    htf('fec-roots24', ['--partition_size', '4194304', '--partition_name', 'r24', '--fec_num_roots', '24', '--block_size', '4096'],
        'blockbyte:4096:700', 'fec/r24.img'),
    htf('fec-no-psize', ['--partition_name', 'np'] + S4, 'blockbyte:4096:1024', 'fec/np.img'),
    htf('fec-no-psize-rerun', ['--partition_name', 'np'] + S4, None, 'fec/np.img'),
    htf('fec-sparse', ['--partition_size', '1048576', '--partition_name', 'sp'] + S2,
        'simg:blockbyte:4096:40+zero:65536+fill:07:4096', 'fec/sp.img'),
    htf('fec-sparse-rerun', ['--partition_size', '1048576', '--partition_name', 'sp'] + S2, None, 'fec/sp.img'),
    htf('fec-sparse-roots8-no-psize', ['--partition_name', 'sp8', '--fec_num_roots', '8'],
        'simg:blockbyte:4096:200+zero:1048576+fill:07:12288', 'fec/sp8.img'),
    case('fec-calc-max', ['add_hashtree_footer', '--partition_size', '4194304', '--calc_max_image_size']),
    case('fec-calc-max-roots8', ['add_hashtree_footer', '--partition_size', '4194304', '--fec_num_roots', '8', '--calc_max_image_size']),
    case('info-fec-few', ['info_image', '--image', 'fec/few.img']),
    case('info-fec-roots24', ['info_image', '--image', 'fec/r24.img']),
    case('info-fec-no-psize', ['info_image', '--image', 'fec/np.img']),
    case('info-fec-sparse', ['info_image', '--image', 'fec/sp.img']),
    case('verify-fec-few', ['verify_image', '--image', 'fec/few.img']),
    case('verify-fec-roots8', ['verify_image', '--image', 'fec/r8.img', '--key', 'keys/rsa2048.pub.pem']),
    case('verify-fec-roots24', ['verify_image', '--image', 'fec/r24.img']),
    case('verify-fec-sparse', ['verify_image', '--image', 'fec/sp.img']),
    case('verify-fec-sparse-roots8', ['verify_image', '--image', 'fec/sp8.img']),
    case('zh-fec-roots8', ['zero_hashtree', '--image', 'fec/z8.img'], {'fec/z8.img': 'copy:fec/r8.img'}),
    case('zh-fec-sparse', ['zero_hashtree', '--image', 'fec/zsp.img'], {'fec/zsp.img': 'copy:fec/sp.img'}),
    case('info-fec-zeroed', ['info_image', '--image', 'fec/z8.img']),
    case('ri-fec-grow', ['resize_image', '--image', 'fec/rf.img', '--partition_size', '2097152'], {'fec/rf.img': 'copy:fec/few.img'}),
    case('ri-fec-shrink', ['resize_image', '--image', 'fec/rf.img', '--partition_size', '65536']),
    case('ri-fec-err-too-small', ['resize_image', '--image', 'fec/rf.img', '--partition_size', '32768']),
    case('ri-fec-sparse', ['resize_image', '--image', 'fec/rsp.img', '--partition_size', '2097152'], {'fec/rsp.img': 'copy:fec/sp.img'}),
    case('info-fec-resized', ['info_image', '--image', 'fec/rf.img']),
    # Roots the kernel's dm-verity does not take (it takes 2 to 24): `fec` refuses 0, makes 1 and 25.
    htf('fec-roots0', ['--partition_size', '1048576', '--partition_name', 'r0', '--fec_num_roots', '0'], 'blockbyte:4096:5', 'fec/r0.img'),
    htf('fec-roots1', ['--partition_size', '1048576', '--partition_name', 'r1', '--fec_num_roots', '1'], 'blockbyte:4096:5', 'fec/r1.img'),
    htf('fec-roots25', ['--partition_size', '1048576', '--partition_name', 'r25', '--fec_num_roots', '25'], 'blockbyte:4096:5', 'fec/r25.img'),
    case('info-fec-roots25', ['info_image', '--image', 'fec/r25.img']),
    # Release strings given empty (added last, the cases above unchanged): --internal_release_string ''
    # writes none, --append_to_release_string '' a space after avbtool's.
    hf('hf-release-empty', ['--partition_size', '131072', '--partition_name', 'boot', '--salt', SALT,
                            '--internal_release_string', ''] + S2, file='rel.img'),
    hf('hf-append-empty', ['--partition_size', '131072', '--partition_name', 'boot', '--salt', SALT,
                           '--append_to_release_string', ''], file='rel.img'),
    case('ht-release-empty', ['add_hashtree_footer', '--image', 'relht.img', '--partition_size', '262144', '--partition_name', 'system',
                              '--do_not_generate_fec', '--salt', SALT, '--internal_release_string', ''],
         {'relht.img': 'blockbyte:4096:8'}),
    case('ht-release-both-empty', ['add_hashtree_footer', '--image', 'relht.img', '--partition_size', '262144', '--partition_name', 'system',
                                   '--do_not_generate_fec', '--salt', SALT, '--internal_release_string', '', '--append_to_release_string', ''],
         {'relht.img': 'blockbyte:4096:8'}),
    case('mv-release-empty', ['make_vbmeta_image', '--output', 'rel.vbmeta', '--internal_release_string', ''] + S2),
    case('mv-append-empty', ['make_vbmeta_image', '--output', 'rel.vbmeta', '--append_to_release_string', '']),
    case('mv-release-empty-append', ['make_vbmeta_image', '--output', 'rel.vbmeta', '--internal_release_string', '',
                                     '--append_to_release_string', 'x']),
    case('mv-release-equals-empty', ['make_vbmeta_image', '--output', 'rel.vbmeta', '--internal_release_string=',
                                     '--append_to_release_string=']),
    case('info-release-empty', ['info_image', '--image', 'rel.vbmeta']),
    case('info-append-empty', ['info_image', '--image', 'rel.img']),
    # --output_vbmeta_image and --output in a directory that does not exist: argparse's error, exit 2.
    hf('hf-err-output-nodir', ['--partition_size', '131072', '--partition_name', 'boot', '--salt', SALT,
                               '--output_vbmeta_image', 'nodir/vb.img'], file='nodir.img'),
    case('ht-err-output-nodir', ['add_hashtree_footer', '--image', 'nodir.img', '--partition_size', '262144',
                                 '--do_not_generate_fec', '--salt', SALT, '--output_vbmeta_image', 'nodir/vb.img'],
         {'nodir.img': 'blockbyte:4096:8'}),
    case('mv-err-output-nodir', ['make_vbmeta_image', '--output', 'nodir/vb.img']),
    # verify_image of footers whose unsigned fields are damaged (footer:FIELD:VALUE:SPEC), in vf/ under the
    # partition's name (verify_image checks the descriptors against that file): avbtool reads only the
    # footer's magic and vbmeta offset.
    case('vf-footer-major', ['verify_image', '--image', 'vf/boot.img'], {'vf/boot.img': 'footer:major:2:copy:boot.img'}),
    case('vf-footer-minor', ['verify_image', '--image', 'vf/boot.img'], {'vf/boot.img': 'footer:minor:4294967295:copy:boot.img'}),
    case('vf-footer-orig-past-vbmeta', ['verify_image', '--image', 'vf/boot.img'], {'vf/boot.img': 'footer:orig:131072:copy:boot.img'}),
    case('vf-footer-orig-max', ['verify_image', '--image', 'vf/boot.img'], {'vf/boot.img': 'footer:orig:18446744073709551615:copy:boot.img'}),
    case('vf-footer-size-0', ['verify_image', '--image', 'vf/boot.img'], {'vf/boot.img': 'footer:size:0:copy:boot.img'}),
    case('vf-footer-size-short', ['verify_image', '--image', 'vf/boot.img'], {'vf/boot.img': 'footer:size:300:copy:boot.img'}),
    case('vf-footer-size-past-footer', ['verify_image', '--image', 'vf/boot.img'], {'vf/boot.img': 'footer:size:131072:copy:boot.img'}),
    case('vf-footer-size-max', ['verify_image', '--image', 'vf/boot.img'], {'vf/boot.img': 'footer:size:18446744073709551615:copy:boot.img'}),
    case('vf-ht-footer-major', ['verify_image', '--image', 'vf/system.img'], {'vf/system.img': 'footer:major:2:copy:system.img'}),
    case('vf-ht-footer-orig', ['verify_image', '--image', 'vf/system.img'], {'vf/system.img': 'footer:orig:262144:copy:system.img'}),
    case('vf-ht-footer-size-0', ['verify_image', '--image', 'vf/system.img', '--key', 'keys/rsa2048.pub.pem'],
         {'vf/system.img': 'footer:size:0:copy:system.img'}),
    case('vf-footer-offset-off', ['verify_image', '--image', 'vf/boot.img'], {'vf/boot.img': 'footer:offset:4096:copy:boot.img'}),
    # A file of 256 bytes or more with no footer and no vbmeta, whichever subcommand reads it; refusals
    # whose exit code is argparse's or avbtool's own.
    case('info-err-not-vbmeta', ['info_image', '--image', 'nv.img'], {'nv.img': 'fill:5a:20480'}),
    case('vf-err-not-vbmeta', ['verify_image', '--image', 'nv.img']),
    case('mv-err-include-not-vbmeta', ['make_vbmeta_image', '--output', 'nv.vbmeta', '--include_descriptors_from_image', 'nv.img']),
    case('av-err-vbmeta-not-vbmeta', ['append_vbmeta_image', '--image', 'nvi.img', '--partition_size', '131072', '--vbmeta_image', 'nv.img'],
         {'nvi.img': 'blockbyte:4096:4'}),
    case('vf-err-chain-malformed', ['verify_image', '--image', 'dev/vbmeta.img', '--expected_chain_partition', 'vbmeta_system:1']),
    case('mv-err-number-like-option', ['make_vbmeta_image', '--output', 'nv.vbmeta', '--rollback_index', '-0x10']),
]

def fecprep(psize, raw, d):
    """add_hashtree_footer (FEC, 2 roots) of raw."""
    with tempfile.TemporaryDirectory() as t:
        img = os.path.join(t, 'img')
        open(img, 'wb').write(raw)
        subprocess.run(['python3', AVBTOOL, 'add_hashtree_footer', '--image', img, '--partition_size', psize,
                        '--partition_name', 'system', '--hash_algorithm', 'sha256', '--salt', SALT, '--fec_num_roots', '2'],
                       check=True)
        return open(img, 'rb').read()


FOOTER_FIELDS = ['major', 'minor', 'orig', 'offset', 'size']


def image(spec, d):
    if spec.startswith('fecprep:'):  # fecprep:PARTITION_SIZE:SPEC
        _, psize, rest = spec.split(':', 2)
        return fecprep(psize, image(rest, d), d)
    if spec.startswith('footer:'):  # footer:FIELD:VALUE:SPEC, the AVB footer of SPEC with FIELD set to VALUE
        _, field, value, rest = spec.split(':', 3)
        b = bytearray(image(rest, d))
        f = list(struct.unpack('!2LQQQ', b[-60:-28]))
        f[FOOTER_FIELDS.index(field)] = int(value)
        b[-60:-28] = struct.pack('!2LQQQ', *f)
        return bytes(b)
    out = bytearray()
    for part in spec.split('+'):
        f = part.split(':')
        if f[0] == 'zero':
            out += bytes(int(f[1]))
        elif f[0] == 'fill':
            out += bytes([int(f[1], 16)]) * int(f[2])
        elif f[0] == 'blockbyte':
            b = int(f[1])
            for i in range(int(f[2])):
                out += bytes([i % 256]) * b
        elif f[0] in ('simg', 'simg1024'):  # img2simg of the rest of the spec (simg1024: in 1024-byte blocks)
            raw = image(spec[len(f[0]) + 1:], d)
            with tempfile.TemporaryDirectory() as t:
                open(os.path.join(t, 'raw'), 'wb').write(raw)
                subprocess.run(['img2simg', os.path.join(t, 'raw'), os.path.join(t, 'simg')] + (['1024'] if f[0] == 'simg1024' else []),
                               check=True)
                return open(os.path.join(t, 'simg'), 'rb').read()
        elif f[0] == 'copy':
            out += open(os.path.join(d, f[1]), 'rb').read()
        else:
            raise ValueError(spec)
    return bytes(out)


def snapshot(d):
    got = {}
    for root, dirs, files in os.walk(d):
        rel = os.path.relpath(root, d)
        if rel.split(os.sep)[0] in ('keys', 'props'):
            continue
        for f in files:
            p = os.path.join(root, f)
            if f in ('helper.py', 'helper.log'):
                continue
            got[os.path.normpath(os.path.relpath(p, d))] = hashlib.sha256(open(p, 'rb').read()).hexdigest()
    return got


def main():
    # avbtool runs AOSP's `fec` (from PATH) for its FEC: see README.md for the one used.
    if not shutil.which('fec'):
        sys.exit('record.py: no `fec` on PATH (AOSP system/extras verity/fec, see README.md)')
    blobs = os.path.join(HERE, 'blobs')
    shutil.rmtree(blobs, ignore_errors=True)
    os.makedirs(blobs)
    d = tempfile.mkdtemp(prefix='avbvec-')
    for sub in ('keys', 'props'):
        shutil.copytree(os.path.join(HERE, '..', 'vectors', sub), os.path.join(d, sub))
    shutil.copy(os.path.join(HERE, 'helper.py'), d)
    os.makedirs(os.path.join(d, 'dev'))
    prov = {}  # file -> where its bytes come from: spec:SPEC, or blob:SHA256
    state = {}  # case -> its files as it left them (file -> sha256)
    out = []
    for c in CASES:
        inputs = {}
        for f, spec in c['inputs'].items():
            if spec.startswith('case:'):
                _, src, sf = spec.split(':')
                b = gzip.decompress(open(os.path.join(blobs, state[src][sf] + '.gz'), 'rb').read())
            else:
                b = image(spec, d)
            os.makedirs(os.path.dirname(os.path.join(d, f)), exist_ok=True)
            with open(os.path.join(d, f), 'wb') as w:
                w.write(b)
            if spec.startswith(('case:', 'copy:', 'fecprep:')) or 'copy:' in spec:  # simg:copy:... too
                keep(blobs, b)
                prov[f] = 'blob:' + hashlib.sha256(b).hexdigest()
            else:
                prov[f] = 'spec:' + spec
            inputs[f] = prov[f]
        before = snapshot(d)
        # Every file the case may read, as it is now: named in the args (or
        # in a part of one), or beside an image with the name of a chain.
        # The FEC cases' files are in fec/: only those there (and named) are theirs.
        in_fec = any(a.startswith('fec/') for a in c['args'])
        for f in before:
            named = any(f in a.split(':') or f == a for a in c['args'])
            whole = c['args'][0] in ('print_partition_digests', 'calculate_vbmeta_digest', 'verify_image')
            if f not in inputs and (named or (f.startswith('fec/') and whole if in_fec else f.startswith('dev/') or whole)):
                inputs[f] = prov[f]
        log = os.path.join(d, 'helper.log')
        if os.path.exists(log):
            os.remove(log)
        env = dict(os.environ, HELPER_LOG=log, **c['env'])
        p = subprocess.run(['python3', AVBTOOL] + c['args'], cwd=d, env=env, capture_output=True)
        after = snapshot(d)
        outputs = {}
        for f, sha in sorted(after.items()):
            if before.get(f) != sha:
                b = open(os.path.join(d, f), 'rb').read()
                keep(blobs, b)
                outputs[f] = {'size': len(b), 'sha256': sha}
                prov[f] = 'blob:' + sha
        for f in before:
            if f not in after:
                outputs[f] = None
        state[c['name']] = after
        rec = dict(name=c['name'], args=c['args'], env=c['env'], inputs=dict(sorted(inputs.items())), exit=p.returncode,
                   stdout=p.stdout.decode('utf-8', 'backslashreplace'),
                   stderr=p.stderr.decode('utf-8', 'backslashreplace').replace(AVBTOOL, 'avbtool').replace(d, '.'),
                   outputs=outputs)
        if os.path.exists(log):
            rec['helper'] = open(log).read().splitlines()
        out.append(rec)
    with open(os.path.join(HERE, 'cases.jsonl'), 'w') as w:
        for rec in out:
            w.write(json.dumps(rec) + '\n')
    shutil.rmtree(d)


def keep(blobs, b):
    p = os.path.join(blobs, hashlib.sha256(b).hexdigest() + '.gz')
    if not os.path.exists(p):
        with open(p, 'wb') as w:
            w.write(gzip.compress(b, 9, mtime=0))


if __name__ == '__main__':
    main()
