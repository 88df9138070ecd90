#!/usr/bin/env python3
"""Test signing helper for the vectors in this directory (see README.md).

Called as avbtool calls a --signing_helper (ALGORITHM KEY, the block to sign
on stdin, the signature on stdout) or a --signing_helper_with_files
(ALGORITHM KEY FILE, the block in FILE, overwritten with the signature). It
signs with openssl (raw RSA: the block is already padded), with the private
key KEY names (KEY.pub.pem stands for KEY.pem), and appends what it was given
to $HELPER_LOG. $HELPER_MODE: ok (default), fail (a message on stderr, exit
3), short (one byte too few), long (one byte too many).
"""
import hashlib, os, subprocess, sys

args = sys.argv[1:]
mode = os.environ.get('HELPER_MODE', 'ok')
block = open(args[2], 'rb').read() if len(args) == 3 else sys.stdin.buffer.read()
log = os.environ.get('HELPER_LOG')
if log:
    with open(log, 'a') as f:
        f.write('argc=%d alg=%s key=%s via=%s in=%d:%s\n' % (
            len(args), args[0], args[1], 'file' if len(args) == 3 else 'stdin',
            len(block), hashlib.sha256(block).hexdigest()))
if mode == 'fail':
    sys.stderr.write('helper: no signing today\n')
    sys.exit(3)
key = args[1]
if key.endswith('.pub.pem'):
    key = key[:-len('.pub.pem')] + '.pem'
sig = subprocess.run(['openssl', 'rsautl', '-sign', '-raw', '-inkey', key],
                     input=block, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, check=True).stdout
if mode == 'short':
    sig = sig[:-1]
elif mode == 'long':
    sig += b'\0'
if len(args) == 3:
    with open(args[2], 'wb') as f:
        f.write(sig)
else:
    sys.stdout.buffer.write(sig)
