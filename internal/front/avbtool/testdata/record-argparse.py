#!/usr/bin/env python3
"""Records avbtool's answers where argparse's own behaviour shows into
argparse.jsonl: each subcommand's --help (and -h, an abbreviation, help
after other options), and command lines where the order in which argparse
takes its arguments decides the error (two bad values, a value before an
unknown option, a missing required option after a bad value, '--',
abbreviations, --x=v). Run with avbtool 1.3.0 (Python 3.11):

    AVBTOOL=/path/to/avbtool.py python3 internal/front/avbtool/testdata/record-argparse.py

avbtool is copied into an empty scratch directory holding one empty file,
present.img, and run there as "python3 avbtool.py ARGS" with COLUMNS unset
(argparse then wraps at 80 columns); its code is not kept. No case may
write a file (none names an output argparse would create).
"""
import json, os, shutil, subprocess, sys, tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SUBS = ['add_hashtree_footer', 'add_hash_footer', 'append_vbmeta_image', 'resize_image', 'zero_hashtree',
        'make_vbmeta_image', 'calculate_vbmeta_digest', 'extract_vbmeta_image',
        'print_partition_digests', 'info_image', 'verify_image', 'erase_footer', 'extract_public_key',
        'calculate_kernel_cmdline']
HELP = [['--help'], ['-h'], ['--he'], ['-hh'], ['--bogus', '--help'], ['--image', 'missing.img', '--help'],
        ['--help', '--image', 'missing.img'], ['-hx'], ['--help=1'], ['-h=']]
ORDER = [
    ['--image', 'x.img', '--image', 'y.img'],
    ['--image', 'present.img', '--image', 'y.img'],
    ['--image', 'x.img', '--image', 'present.img'],
    ['--image', 'missing.img', '--partition_size', '147456.0'],
    ['--partition_size', '147456.0', '--image', 'missing.img'],
    ['--partition_size', '1e3', '--rollback_index', 'x'],
    ['--rollback_index', 'x', '--partition_size', '1e3'],
    ['--flags', '0x', '--bogus'],
    ['--bogus', '--flags', '0x'],
    ['--bogus', 'v', '--image', 'missing.img'],
    ['extra', '--image', 'missing.img'],
    ['--image', '--bogus'],
    ['--image', '-5'],
    ['--image', '-x y'],
    ['--image', '--', 'missing.img'],
    ['--image', 'present.img', '--', '--bogus'],
    ['--image=missing.img'],
    ['--im=missing.img', 'extra'],
    ['--image=', 'extra'],
    ['--partition_s=010'],
    ['--partition=1'],
    ['--p', '1'],
    ['--image', 'missing.img', '--p', '1'],
    ['--atx=1'],
    ['--json=1'],
    ['--keep_hashtree=1'],
    ['--padding_size', '0x10', '--padding_size', '010'],
    ['--padding_size', '010', '--padding_size', '0x10', 'extra'],
    ['--image', 'present.img', '--output', '/nonexistent/x', '--image', 'missing.img'],
    ['--output', '/nonexistent/x', '--image', 'missing.img'],
    ['--include_descriptors_from_image', 'present.img', '--include_descriptors_from_image', 'missing.img',
     '--setup_rootfs_from_kernel', 'missing2.img'],
    ['--generate_dm_verity_cmdline_from_hashtree', 'missing.img'],
    ['--generate_dm_verity_cmdline_from_hashtree'],
    ['--rollback_index', '-0x10', '--bogus'],
    ['-x'],
    ['-'],
]
CASES = [[s] + l for s in SUBS for l in HELP + ORDER]
CASES += [['version'] + l for l in HELP + [[], ['x'], ['--'], ['x', '--help'], ['--bogus'], ['-5']]]

work = tempfile.mkdtemp()
try:
    shutil.copy(os.environ['AVBTOOL'], os.path.join(work, 'avbtool.py'))
    open(os.path.join(work, 'present.img'), 'w').close()
    env = dict(os.environ)
    env.pop('COLUMNS', None)
    out = []
    for args in CASES:
        p = subprocess.run([sys.executable, 'avbtool.py'] + args, cwd=work, env=env, capture_output=True, text=True)
        if p.returncode not in (0, 2):
            continue  # argparse took it all: what avbtool then does is not argparse's
        if sorted(os.listdir(work)) != ['avbtool.py', 'present.img'] or os.path.getsize(os.path.join(work, 'present.img')):
            sys.exit('%s: wrote %s' % (args, os.listdir(work)))
        out.append(json.dumps(dict(args=args, exit=p.returncode, stdout=p.stdout, stderr=p.stderr)))
    with open(os.path.join(HERE, 'argparse.jsonl'), 'w') as f:
        f.write('\n'.join(out) + '\n')
finally:
    shutil.rmtree(work)
