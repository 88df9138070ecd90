#!/usr/bin/env python3
"""Independent model of the dm-verity hash tree, written from FORMAT.md only.

Usage: verity_model.py DATA HASH FORMAT DBS HBS SALT OUT
       verity_model.py --batch < JOBS
  HASH   hashlib name, or a kernel name: blake2b-N (BLAKE2b with digest length
         N/8), blake2s-256, sha3-N, rmd160
  FORMAT 1 (H(salt || block), power-of-two slots) or 0 (H(block || salt), packed)
  SALT   hex, or - for none
Covers every whole DBS-byte block of DATA, writes the tree without superblock
(highest level first) to OUT and prints the root hash in hex.
--batch reads one job per line (the seven arguments, tab separated) and prints
one root per line: a single interpreter start for many trees.
"""

import hashlib
import sys


def new_hash(name):
    if name.startswith("blake2b-"):
        size = int(name[len("blake2b-"):]) // 8
        return lambda: hashlib.blake2b(digest_size=size)
    if name == "blake2s-256":
        return lambda: hashlib.blake2s(digest_size=32)
    if name.startswith("sha3-"):
        name = name.replace("-", "_")
    if name == "rmd160":
        name = "ripemd160"
    return lambda: hashlib.new(name)


def main(argv):
    if len(argv) == 2 and argv[1] == "--batch":
        for line in sys.stdin:
            if line.strip():
                print(model(line.rstrip("\n").split("\t")), flush=True)
        return
    if len(argv) != 8:
        sys.exit(__doc__)
    print(model(argv[1:]))


def model(args):
    """Writes the tree args describe and returns the root hash in hex."""
    if len(args) != 7:
        raise ValueError("want 7 arguments, got %d: %r" % (len(args), args))
    data_path, alg, fmt, dbs, hbs, salt_hex, out_path = args
    fmt, dbs, hbs = int(fmt), int(dbs), int(hbs)
    assert fmt in (0, 1)
    salt = b"" if salt_hex == "-" else bytes.fromhex(salt_hex)
    new = new_hash(alg)
    ds = new().digest_size

    def digest(block):
        h = new()
        if fmt == 1:
            h.update(salt)
            h.update(block)
        else:
            h.update(block)
            h.update(salt)
        return h.digest()

    # hpb = 2^floor(log2(hbs / ds)); slot = nextpow2(ds) in format 1.
    hpb = 1
    while hpb * 2 <= hbs // ds:
        hpb *= 2
    assert hpb >= 2
    slot = ds
    if fmt == 1:
        slot = 1
        while slot < ds:
            slot *= 2

    with open(data_path, "rb") as f:
        data = f.read()
    n = len(data) // dbs
    assert n >= 1, "no whole data block"

    digests = [digest(data[i * dbs:(i + 1) * dbs]) for i in range(n)]
    levels = []  # levels[i] is the bytes of level i
    while len(digests) > 1:
        blocks = []
        for i in range(0, len(digests), hpb):
            blk = b"".join(d.ljust(slot, b"\0") for d in digests[i:i + hpb])
            blocks.append(blk.ljust(hbs, b"\0"))
        levels.append(b"".join(blocks))
        digests = [digest(b) for b in blocks]
    root = digests[0]

    # Cross-check the counts against the closed forms of FORMAT.md.
    shift = hpb.bit_length() - 1
    nlevels = 0
    while (n - 1) >> (nlevels * shift):
        nlevels += 1
    assert nlevels == len(levels), (nlevels, len(levels))
    for i, lv in enumerate(levels):
        want = -(-n // hpb ** (i + 1))
        assert len(lv) == want * hbs, (i, len(lv) // hbs, want)

    with open(out_path, "wb") as f:
        for lv in reversed(levels):
            f.write(lv)
    return root.hex()


if __name__ == "__main__":
    main(sys.argv)
