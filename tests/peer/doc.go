// Package peer holds tests only: differential tests of the fronts against
// the tools they stand in for. The veritysetup front runs against the real
// veritysetup (cryptsetup 2.6.1): seeded random command lines for format,
// verify and dump run through both on identical copies of their inputs.
// The avbtool front runs against avbtool 1.3.0's recorded answers
// (testdata/avbtool-seed1.jsonl, made with -peer.record where avbtool is
// at hand) to seeded cases over every subcommand it takes. Every
// difference in exit code, stdout, the gist of stderr or the files left
// is either a named rule (a deliberate difference, with its reason), a
// known divergence (a bug of the front still to fix, with its issue item)
// or a failure. See README.md.
package peer
