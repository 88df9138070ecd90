#!/usr/bin/env python3
"""Records avbtool's answers to command lines its argparse refuses into
usage.jsonl: for each subcommand the avbtool front takes, options that do
not parse, files that cannot be opened, required options missing, arguments
no subcommand takes. Run with avbtool 1.3.0 (Python 3.11, whose argparse
words these):

    AVBTOOL=/path/to/avbtool.py python3 internal/front/avbtool/testdata/record-usage.py

avbtool is copied into an empty scratch directory and run there as
"python3 avbtool.py ARGS" with COLUMNS unset (argparse then wraps at 80
columns), so that its messages start with "avbtool.py"; its code is not
kept. Every case must exit 2 (nothing is run, nothing written).
"""
import json, os, shutil, subprocess, sys, tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SUBS = ['add_hashtree_footer', 'add_hash_footer', 'append_vbmeta_image', 'resize_image', 'zero_hashtree',
        'make_vbmeta_image', 'calculate_vbmeta_digest', 'extract_vbmeta_image',
        'print_partition_digests', 'info_image', 'verify_image', 'erase_footer', 'extract_public_key',
        'calculate_kernel_cmdline']
LINES = [
    ['--rollback_index', 'x'],
    ['--image', 'none.img', '--bogus', 'y'],
    ['--ima'],
    ['--output'],
    ['--image', '/tmp', '--output', '/nonexistent/x', '--key', 'k'],
    ['--output', '/nonexistent/x', '--key', 'k'],
    ['extra'],
    ['--include_descriptors_from_image', '/tmp'],
    ['--setup_rootfs_from_kernel', 'none.img'],
    ['--flags', '0x'],
    ['--padding_size', '1e3'],
    ['--partition', '1'],
    ['--output_vbmeta_image', '/nonexistent/v'],
]
CASES = [[s] + l for s in SUBS for l in LINES] + [['version', 'x']]

work = tempfile.mkdtemp()
try:
    shutil.copy(os.environ['AVBTOOL'], os.path.join(work, 'avbtool.py'))
    env = dict(os.environ)
    env.pop('COLUMNS', None)
    out = []
    for args in CASES:
        p = subprocess.run([sys.executable, 'avbtool.py'] + args, cwd=work, env=env, capture_output=True, text=True)
        if p.returncode != 2:
            sys.exit('%s: exit %d, want 2' % (args, p.returncode))
        if sorted(os.listdir(work)) != ['avbtool.py']:
            sys.exit('%s: wrote %s' % (args, os.listdir(work)))
        out.append(json.dumps(dict(args=args, exit=p.returncode, stdout=p.stdout, stderr=p.stderr)))
    with open(os.path.join(HERE, 'usage.jsonl'), 'w') as f:
        f.write('\n'.join(out) + '\n')
finally:
    shutil.rmtree(work)
