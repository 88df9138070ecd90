// Package peer holds tests only: a differential test of the veritysetup
// front against the real veritysetup (cryptsetup 2.6.1). Seeded random
// command lines for format, verify and dump run through both on identical
// copies of their inputs, and every difference in exit code, stdout, the
// first line of stderr or the files left is either a named rule (a
// deliberate difference, with its reason), a known divergence (a bug of
// the front still to fix, with its issue item) or a failure. See
// README.md.
package peer
