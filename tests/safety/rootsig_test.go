package safety_test

// Root hash signatures (veritygen --root-hash-signature and
// --root-hash-signature-json, veritycheck --root-hash-signature): bad
// keys, certificates and signatures are refused with nothing written, the
// outputs follow --root-hash-file's rules, and every wait on a key or
// signature ends on a signal.

import (
	"encoding/pem"
	"syscall"
	"testing"
	"time"

	"github.com/veritytree/veritytree/internal/testtool"
)

func init() { moreAttacks = append(moreAttacks, rootSigAttacks) }

// signInputs makes d.img, its tree h (root hash in root.hex), a P-256 key
// and its certificate k.pem and k.crt, and another certificate o.crt.
func signInputs(seed uint64) func(t *testing.T, d string) {
	return func(t *testing.T, d string) {
		treeOf("d.img", "h", seed)(t, d)
		testtool.WriteSigningKey(t, d, "k", "ec256")
		testtool.WriteSigningKey(t, d, "o", "ec384")
	}
}

// signed is signInputs, and the root hash's signature in sig.p7s and
// sig.json (made by veritygen, which rewrites h the same way).
func signed(seed uint64) func(t *testing.T, d string) {
	return func(t *testing.T, d string) {
		signInputs(seed)(t, d)
		run(t, d, "veritygen", withGen("--root-hash-signature=sig.p7s", "--root-hash-signature-json=sig.json", "--sign-key=k.pem", "--sign-cert=k.crt", "d.img", "h")...)
	}
}

var rootSigAttacks = []attack{
	{item: "rs", name: "veritygen: --sign-key is not a key (random bytes)",
		setup: func(t *testing.T, d string) {
			signInputs(60)(t, d)
			randomFile(t, d, "junk.pem", 5000, 61)
		},
		prog: "veritygen", args: withGen("--root-hash-signature=sig.p7s", "--sign-key=junk.pem", "--sign-cert=k.crt", "d.img", "h"), exit: []int{2},
		stderr: []string{`--sign-key junk\.pem: no PEM private key in it`, `hint: give a private key in PEM`}},
	{item: "rs", name: "veritygen: --sign-key is encrypted",
		setup: func(t *testing.T, d string) {
			signInputs(62)(t, d)
			writeFile(t, d, "enc.pem", pem.EncodeToMemory(&pem.Block{Type: "ENCRYPTED PRIVATE KEY", Bytes: []byte{0x30, 0x03, 0x02, 0x01, 0x00}}))
		},
		prog: "veritygen", args: withGen("--root-hash-signature=sig.p7s", "--sign-key=enc.pem", "--sign-cert=k.crt", "d.img", "h"), exit: []int{2},
		stderr: []string{`the private key is encrypted`, `--sign-key=<\(openssl pkey -in KEY\.pem\)`}},
	{item: "rs", name: "veritygen: --sign-cert is another key's certificate",
		setup: signInputs(63),
		prog:  "veritygen", args: withGen("--root-hash-signature=sig.p7s", "--sign-key=k.pem", "--sign-cert=o.crt", "d.img", "h"), exit: []int{2},
		stderr: []string{`--sign-key k\.pem is not the key of --sign-cert o\.crt \(CN=o,O=veritytree tests\)`}},
	{item: "rs", name: "veritygen: --root-hash-signature names a file that is not a signature",
		setup: func(t *testing.T, d string) {
			signInputs(64)(t, d)
			writeFile(t, d, "notes.txt", []byte("the only copy of my notes\n"))
		},
		prog: "veritygen", args: withGen("--root-hash-signature=notes.txt", "--sign-key=k.pem", "--sign-cert=k.crt", "d.img", "h"), exit: []int{2},
		stderr: []string{`--root-hash-signature notes\.txt is not a root hash signature`, `--force`}},
	{item: "rs", name: "veritygen: --root-hash-signature-json names a file system image",
		setup: func(t *testing.T, d string) {
			signInputs(65)(t, d)
			ext4Image(t, d, "root.img", 4*mib, 66)
		},
		prog: "veritygen", args: withGen("--root-hash-signature-json=root.img", "--sign-key=k.pem", "--sign-cert=k.crt", "d.img", "h"), exit: []int{2},
		stderr: []string{`--root-hash-signature-json root\.img is not a signature JSON`}},
	{item: "rs", name: "veritygen: --root-hash-signature and its JSON are replaced when ours",
		setup: signed(67),
		prog:  "veritygen", args: withGen("--root-hash-signature=sig.p7s", "--root-hash-signature-json=sig.json", "--sign-key=k.pem", "--sign-cert=k.crt", "--salt=00", "d.img", "h"), exit: []int{0},
		mayChange: []string{"h", "sig.p7s", "sig.json"}},
	{item: "rs", name: "veritygen: --sign-key is /dev/zero",
		setup: signInputs(68),
		prog:  "veritygen", args: withGen("--root-hash-signature=sig.p7s", "--sign-key=/dev/zero", "--sign-cert=k.crt", "d.img", "h"), exit: []int{2},
		stderr: []string{`--sign-key /dev/zero is larger than 65536 bytes`}, timeout: 10 * time.Second},
	{item: "rs", name: "veritygen: --sign-key is a FIFO without writer, SIGINT",
		setup: func(t *testing.T, d string) {
			signInputs(69)(t, d)
			testtool.MkFIFO(t, d, "key.fifo")
		},
		prog: "veritygen", args: withGen("--root-hash-signature=sig.p7s", "--sign-key=key.fifo", "--sign-cert=k.crt", "d.img", "h"), exit: []int{2},
		stderr:  []string{`interrupted while waiting for --sign-key key\.fifo; nothing was written`},
		trigger: &trigger{sig: syscall.SIGINT, onWchan: fifoWaits}, timeout: 10 * time.Second},
	{item: "rs", name: "veritycheck: the signature does not verify with --sign-cert",
		setup: signed(70),
		prog:  "veritycheck", args: []string{"--root-hash-file=root.hex", "--root-hash-signature=sig.p7s", "--sign-cert=o.crt", "d.img", "h"}, exit: []int{1},
		stderr: []string{`the root hash signature is not trusted`}},
	{item: "rs", name: "veritycheck: the signature is another root hash's",
		setup: func(t *testing.T, d string) {
			signed(71)(t, d)
			writeFile(t, d, "other.hex", []byte("0000000000000000000000000000000000000000000000000000000000000000"))
		},
		prog: "veritycheck", args: []string{"--root-hash-file=other.hex", "--root-hash-signature=sig.json", "--sign-cert=k.crt", "d.img", "h"}, exit: []int{1},
		stderr: []string{`the signature JSON is for root hash [0-9a-f]{64}, not 0{64}`}},
	{item: "rs", name: "veritycheck: the signature is /dev/zero",
		setup: signed(72),
		prog:  "veritycheck", args: []string{"--root-hash-file=root.hex", "--root-hash-signature=/dev/zero", "--sign-cert=k.crt", "d.img", "h"}, exit: []int{2},
		stderr: []string{`--root-hash-signature /dev/zero is larger than 4194304 bytes`}, timeout: 10 * time.Second},
	{item: "rs", name: "veritycheck: the signature is random bytes",
		setup: func(t *testing.T, d string) {
			signed(73)(t, d)
			randomFile(t, d, "junk.p7s", 32767, 74)
		},
		prog: "veritycheck", args: []string{"--root-hash-file=root.hex", "--root-hash-signature=junk.p7s", "--sign-cert=k.crt", "d.img", "h"}, exit: []int{2},
		stderr: []string{`neither DER PKCS#7 nor systemd's signature JSON`}},
	{item: "rs", name: "veritycheck: the signature is a FIFO without writer, SIGTERM",
		setup: func(t *testing.T, d string) {
			signed(75)(t, d)
			testtool.MkFIFO(t, d, "sig.fifo")
		},
		prog: "veritycheck", args: []string{"--root-hash-file=root.hex", "--root-hash-signature=sig.fifo", "--sign-cert=k.crt", "d.img", "h"}, exit: []int{2},
		stderr:  []string{`interrupted`},
		trigger: &trigger{sig: syscall.SIGTERM, onWchan: fifoWaits}, timeout: 10 * time.Second},
}
