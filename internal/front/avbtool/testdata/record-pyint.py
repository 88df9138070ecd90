#!/usr/bin/env python3
"""Records how Python 3.11's int(s, 0) -- avbtool's parse_number -- reads
a table of strings into pyint.jsonl: each line [s, "N"] with the number
in decimal ("big" or "-big" past 30 digits), or [s, null] for a
ValueError. The strings are every
combination of a few surroundings (whitespace, ASCII and Unicode), signs,
base prefixes and bodies (digits, underscores, leading zeros, letters,
Unicode digits, numbers around 2^64, a decimal past Python's 4300 digits).

    python3 internal/front/avbtool/testdata/record-pyint.py
"""
import itertools, json, os, sys

if sys.version_info[:2] != (3, 11):
    sys.exit('Python 3.11 is avbtool 1.3.0\'s here; this is %d.%d' % sys.version_info[:2])
HERE = os.path.dirname(os.path.abspath(__file__))
SPACES = ['', ' ', '\t', '\n\v\f\r', '\x1c', '\x1f', '\x85', '\xa0', '\u1680', '\u2003', '\u2028', '\u202f',
          '\u3000', '\u200b', '\ufeff']
SIGNS = ['', '+', '-', '+-', '--', '- ']
PREFIXES = ['', '0x', '0X', '0o', '0O', '0b', '0B', '0d', '0_x', 'x']
BODIES = ['0', '00', '000', '1', '7', '8', '9', '10', '010', '0_0', '0_1', '1_0', '1__0', '_1', '1_', '_',
          '', 'ff', 'FF', 'fF_0', 'g', '1.0', '1e3', '12345678901234567890', '18446744073709551615',
          '18446744073709551616', 'ffffffffffffffff', '1' + '0' * 16, '1' + '0' * 64,
          '\u0661\u0662', '\uff11\uff12', '\u0967\u0966', '\U0001d7cf\U0001d7d0', '\u0661_\u0662', '\u00b2',
          '\u2460', '\u0660\u0661', '\u0f20\u0f21']
CASES = [sp + sg + pf + b + sp2 for sp, sg, pf, b, sp2 in
         itertools.product(SPACES[:3], SIGNS, PREFIXES, BODIES, ['', ' '])]
CASES += [sp + '12' + sp for sp in SPACES] + [sp + '-0x1' + SPACES[1] for sp in SPACES]
CASES += ['9' * 4300, '9' * 4301, '0x' + 'f' * 5000, '1' * 20 + '_' + '1' * 20]
out = []
for s in CASES:
    try:
        n = int(s, 0)
        v = str(n) if abs(n) < 10**30 else ('-big' if n < 0 else 'big')
    except ValueError:
        v = None
    out.append(json.dumps([s, v]))
with open(os.path.join(HERE, 'pyint.jsonl'), 'w') as f:
    f.write('\n'.join(out) + '\n')
