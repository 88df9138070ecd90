package safety_test

// The trust issue's items 8-10: small inputs that are FIFOs without
// writer (every wait ends on SIGINT or SIGTERM), a pipe with data (read
// as a file), a 64 GiB boot image hashed by verify_image (SIGINT ends
// it), and the worst vbmetas (peak RSS under 64 MiB for every command
// that reads them).

import (
	"bytes"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/veritytree/veritytree/avb"
	"github.com/veritytree/veritytree/internal/testtool"
)

func init() { moreAttacks = append(moreAttacks, inputAttacks()) }

// fifoTimeout is the time limit of the rows that wait on a FIFO: the
// signal comes once the command waits; before the fixes it was ignored
// and the row was killed here.
const fifoTimeout = 15 * time.Second

func inputAttacks() []attack {
	rows := fifoRows()
	rows = append(rows, pipeRows()...)
	rows = append(rows, hugeBootRow())
	return append(rows, worstVBMetaRows()...)
}

// keyFile copies the repository's RSA-2048 test key (PEM) into dir as
// name.
func keyFile(t *testing.T, dir, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(testtool.ModuleRoot(t), "avb/testdata/vectors/keys/rsa2048.pem"))
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, name, b)
	return b
}

// avbFooterImage makes dir/name: 1 MiB of data with a hashtree footer,
// signed with the test key, as avbtool add_hashtree_footer makes it.
func avbFooterImage(t *testing.T, dir, name string, seed uint64) {
	t.Helper()
	randomFile(t, dir, name, mib, seed)
	keyFile(t, dir, ".sign.pem")
	run(t, dir, "avbtool", "add_hashtree_footer", "--image", name, "--partition_name", "system", "--hash_algorithm", "sha256",
		"--salt", salt, "--algorithm", "SHA256_RSA2048", "--key", ".sign.pem", "--do_not_generate_fec")
	os.Remove(filepath.Join(dir, ".sign.pem"))
}

// onOpen is a trigger the harness does not have: sig is sent to the
// command under test (running prog's binary in dir) once it has dir/name
// open, or sleeps in open(2) waiting for the other end of that FIFO
// (wait_for_partner): the moment it reads a small input, or starts
// hashing an image. sent says whether it was sent.
type onOpen struct {
	sent atomic.Bool
}

func (o *onOpen) watch(t *testing.T, dir, name, prog string, sig syscall.Signal) {
	exe, err := filepath.EvalSymlinks(bins[prog])
	if err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(dir, name)
	done := make(chan struct{})
	t.Cleanup(func() { close(done) })
	go func() {
		for {
			if pid := commandIn(dir, exe); pid != 0 && (hasOpen(pid, target) || sleepsIn(pid, []string{"wait_for_partner"})) {
				o.sent.Store(syscall.Kill(pid, sig) == nil)
				return
			}
			select {
			case <-done:
				return
			case <-time.After(5 * time.Millisecond): // polling /proc, not timing
			}
		}
	}()
}

// commandIn returns the pid of a process running exe in dir, or 0.
func commandIn(dir, exe string) int {
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, p := range procs {
		if cwd, _ := os.Readlink(p + "/cwd"); cwd != dir {
			continue
		}
		if e, _ := os.Readlink(p + "/exe"); e == exe {
			pid, _ := strconv.Atoi(filepath.Base(p))
			return pid
		}
	}
	return 0
}

func hasOpen(pid int, path string) bool {
	fds, _ := filepath.Glob(fmt.Sprintf("/proc/%d/fd/*", pid))
	for _, fd := range fds {
		if target, _ := os.Readlink(fd); target == path {
			return true
		}
	}
	return false
}

// interruptedRow is a row whose command is sent sig once it opens (or
// waits to open) dir/file, and must then end at once with nothing changed:
// exit 2 for veritygen and veritycheck, the shell's status for avbtool
// killed by the signal (130, 143) for the avbtool front.
func interruptedRow(name, file string, setup func(t *testing.T, d string), sig syscall.Signal, prog string, args ...string) attack {
	trig := &onOpen{}
	code, msg := 2, `error: interrupted`
	if prog == "avbtool" {
		code, msg = 128+int(sig), `^\S*avbtool: interrupted by `+map[syscall.Signal]string{syscall.SIGINT: "SIGINT", syscall.SIGTERM: "SIGTERM"}[sig]+`\n$`
	}
	return attack{item: "19.8", name: name,
		setup: func(t *testing.T, d string) {
			setup(t, d)
			trig.watch(t, d, file, prog, sig)
		},
		prog: prog, args: args, exit: []int{code}, stderr: []string{msg}, timeout: fifoTimeout,
		after: func(t *testing.T, d string, o *outcome) {
			if !trig.sent.Load() {
				t.Errorf("the command never opened %s: no %v sent", file, sig)
			}
		}}
}

// withFIFO runs setup, then makes the FIFO dir/name.
func withFIFO(name string, setup func(t *testing.T, d string)) func(t *testing.T, d string) {
	return func(t *testing.T, d string) {
		if setup != nil {
			setup(t, d)
		}
		testtool.MkFIFO(t, d, name)
	}
}

func rawImage(t *testing.T, d string) { randomFile(t, d, "d.img", mib, 41) }

// fifoRows: each small input of item 8 given as a FIFO nobody writes to.
func fifoRows() []attack {
	signed := func(t *testing.T, d string) { avbFooterImage(t, d, "system.img", 42) }
	footer := []string{"add_hashtree_footer", "--image", "d.img", "--partition_size", "8388608", "--do_not_generate_fec"}
	return []attack{
		interruptedRow("add_hashtree_footer --key FIFO, SIGINT", "k.fifo", withFIFO("k.fifo", rawImage), syscall.SIGINT,
			"avbtool", append(footer, "--algorithm", "SHA256_RSA2048", "--key", "k.fifo")...),
		interruptedRow("add_hashtree_footer --prop_from_file FIFO, SIGTERM", "v.fifo", withFIFO("v.fifo", rawImage), syscall.SIGTERM,
			"avbtool", append(footer, "--prop_from_file", "p:v.fifo")...),
		interruptedRow("add_hashtree_footer --public_key_metadata FIFO, SIGINT", "m.fifo", withFIFO("m.fifo", rawImage), syscall.SIGINT,
			"avbtool", append(footer, "--public_key_metadata", "m.fifo")...),
		interruptedRow("add_hashtree_footer --chain_partition's key FIFO, SIGTERM", "c.fifo", withFIFO("c.fifo", rawImage), syscall.SIGTERM,
			"avbtool", append(footer, "--chain_partition", "boot:1:c.fifo")...),
		interruptedRow("verify_image --key FIFO, SIGINT", "k.fifo", withFIFO("k.fifo", signed), syscall.SIGINT,
			"avbtool", "verify_image", "--image", "system.img", "--key", "k.fifo"),
		interruptedRow("verify_image --expected_chain_partition's key FIFO, SIGTERM", "c.fifo", withFIFO("c.fifo", signed), syscall.SIGTERM,
			"avbtool", "verify_image", "--image", "system.img", "--expected_chain_partition", "boot:1:c.fifo"),
		interruptedRow("extract_public_key --key FIFO, SIGINT", "k.fifo", withFIFO("k.fifo", nil), syscall.SIGINT,
			"avbtool", "extract_public_key", "--key", "k.fifo", "--output", "k.bin"),
		interruptedRow("veritygen --avb-key FIFO, SIGTERM", "k.fifo", withFIFO("k.fifo", rawImage), syscall.SIGTERM,
			"veritygen", "--salt="+salt, "--append", "--avb", "--avb-algorithm=SHA256_RSA2048", "--avb-key=k.fifo", "d.img"),
		interruptedRow("veritygen --prop-from-file FIFO, SIGINT", "v.fifo", withFIFO("v.fifo", rawImage), syscall.SIGINT,
			"veritygen", "--salt="+salt, "--append", "--avb", "--prop-from-file=p:v.fifo", "d.img"),
		interruptedRow("veritycheck --avb-key FIFO, SIGTERM", "k.fifo", withFIFO("k.fifo", signed), syscall.SIGTERM,
			"veritycheck", "--avb-key=k.fifo", "system.img"),
	}
}

// pipeRows: a FIFO whose writer comes (as bash's <(cat key.pem) is a pipe
// with its writer) is read as a file.
func pipeRows() []attack {
	feed := func(name string, data func(t *testing.T, d string) []byte, setup func(t *testing.T, d string)) func(t *testing.T, d string) {
		return func(t *testing.T, d string) {
			if setup != nil {
				setup(t, d)
			}
			b := data(t, d)
			testtool.FeedFIFO(t, testtool.MkFIFO(t, d, name), b)
		}
	}
	value := func(t *testing.T, d string) []byte { return []byte("from a pipe") }
	pem := func(t *testing.T, d string) []byte { return keyFile(t, d, "k.pem") }
	return []attack{
		{item: "19.8", name: "add_hashtree_footer --prop_from_file from a pipe",
			setup: feed("v.fifo", value, rawImage),
			prog:  "avbtool", args: []string{"add_hashtree_footer", "--image", "d.img", "--partition_size", "8388608", "--do_not_generate_fec",
				"--prop_from_file", "p:v.fifo"},
			exit: []int{0}, mayChange: []string{"d.img"}, timeout: fifoTimeout,
			after: func(t *testing.T, d string, o *outcome) {
				if info := run(t, d, "avbtool", "info_image", "--image", "d.img"); !strings.Contains(info, "Prop: p -> 'from a pipe'") {
					t.Errorf("the property is not in the vbmeta:\n%s", info)
				}
			}},
		{item: "19.8", name: "extract_public_key --key from a pipe",
			setup: feed("k.fifo", pem, nil),
			prog:  "avbtool", args: []string{"extract_public_key", "--key", "k.fifo", "--output", "k.bin"},
			exit: []int{0}, mayChange: []string{"k.bin"}, timeout: fifoTimeout,
			after: func(t *testing.T, d string, o *outcome) {
				want, err := os.ReadFile(filepath.Join(testtool.ModuleRoot(t), "avb/testdata/vectors/keys/rsa2048.avbpubkey"))
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(readFile(t, d, "k.bin"), want) {
					t.Error("k.bin is not the key's AVB public key blob")
				}
			}},
		{item: "19.8", name: "veritycheck --avb-key from a pipe",
			setup: feed("k.fifo", pem, func(t *testing.T, d string) { avbFooterImage(t, d, "system.img", 43) }),
			prog:  "veritycheck", args: []string{"--avb-key=k.fifo", "system.img"}, exit: []int{0}, timeout: fifoTimeout,
			after: func(t *testing.T, d string, o *outcome) {
				if !strings.Contains(o.stdout, "made with the key of k.fifo") {
					t.Errorf("not checked against the key:\n%s", o.stdout)
				}
			}},
	}
}

// hugeBootRow: verify_image of a vbmeta whose hash descriptor names a
// 64 GiB boot image (an Android sparse file of 40 bytes: one DONT_CARE
// chunk), SIGINT once it hashes it. Hashing 64 GiB takes about a minute
// here; before, SIGINT was ignored until then.
func hugeBootRow() attack {
	const blocks = 16 << 20 // of 4096 bytes: 64 GiB
	trig := &onOpen{}
	return attack{item: "19.9", name: "verify_image hashing a 64 GiB sparse boot.img, SIGINT",
		setup: func(t *testing.T, d string) {
			s := &sparseImage{bs: 4096}
			s.chunk(chunkDontCare, blocks, nil)
			writeFile(t, d, "boot.img", s.bytes())
			hd := &avb.HashDescriptor{ImageSize: blocks * 4096, HashAlgorithm: "sha256", PartitionName: "boot", Digest: make([]byte, 32)}
			writeFile(t, d, "vbmeta.img", vbmetaBlob(t, hd.Encode()))
			trig.watch(t, d, "boot.img", "avbtool", syscall.SIGINT)
		},
		prog: "avbtool", args: []string{"verify_image", "--image", "vbmeta.img"}, exit: []int{130},
		stderr: []string{`^\S*avbtool: interrupted by SIGINT\n$`}, timeout: 20 * time.Second,
		after: func(t *testing.T, d string, o *outcome) {
			if !trig.sent.Load() {
				t.Error("verify_image never opened boot.img: no SIGINT sent")
			}
		}}
}

// vbmetaBlob is a vbmeta blob holding the descriptors descs (encoded),
// signed with the test key (SHA256_RSA2048), laid out as avbtool lays it
// out; made by hand, not with avb.MakeVBMeta, so that a million
// descriptors cost the test their bytes only.
func vbmetaBlob(t *testing.T, descs []byte) []byte {
	t.Helper()
	pemKey, err := os.ReadFile(filepath.Join(testtool.ModuleRoot(t), "avb/testdata/vectors/keys/rsa2048.pem"))
	if err != nil {
		t.Fatal(err)
	}
	key, err := avb.ParsePrivateKeyPEM(pemKey)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := avb.EncodePublicKey(&key.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	const hashSize, sigSize, authSize = 32, 256, 320
	auxSize := (len(descs) + len(pub) + 63) / 64 * 64
	h := &avb.Header{RequiredLibavbMajor: 1, AuthenticationBlockSize: authSize, AuxiliaryBlockSize: uint64(auxSize),
		AlgorithmType: 1, HashSize: hashSize, SignatureOffset: hashSize, SignatureSize: sigSize,
		PublicKeyOffset: uint64(len(descs)), PublicKeySize: uint64(len(pub)), PublicKeyMetadataOffset: uint64(len(descs) + len(pub)),
		DescriptorsSize: uint64(len(descs)), ReleaseString: avb.ReleaseString}
	blob := make([]byte, avb.HeaderSize+authSize+auxSize)
	copy(blob, h.Encode())
	aux := blob[avb.HeaderSize+authSize:]
	copy(aux, descs)
	copy(aux[len(descs):], pub)
	hh := sha256.New()
	hh.Write(blob[:avb.HeaderSize])
	hh.Write(aux)
	digest := hh.Sum(nil)
	sig, err := rsa.SignPKCS1v15(rand.Reader, key, crypto.SHA256, digest)
	if err != nil {
		t.Fatal(err)
	}
	copy(blob[avb.HeaderSize:], digest)
	copy(blob[avb.HeaderSize+hashSize:], sig)
	return blob
}

// worstImage makes dir/name: 1 MiB of data with its tree and a footer
// (by avbtool add_hashtree_footer), its vbmeta replaced by one holding
// its hashtree descriptor and then more (encoded descriptors, up to about
// 16 MiB). It returns the size of the new vbmeta.
func worstImage(t *testing.T, dir, name string, more func(room int) []byte) int {
	t.Helper()
	avbFooterImage(t, dir, name, 44)
	img, err := avb.ReadImage(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	// The image's descriptors: its hashtree descriptor alone.
	h := img.VBMeta.Header
	aux := img.VBMeta.Raw[avb.HeaderSize+h.AuthenticationBlockSize:]
	htBytes := append([]byte{}, aux[h.DescriptorsOffset:h.DescriptorsOffset+h.DescriptorsSize]...)
	room := avb.MaxVBMetaSize - avb.HeaderSize - 320 - 520 - len(htBytes) - 64
	descs := append(htBytes, more(room)...)
	blob := vbmetaBlob(t, descs)
	f := img.Footer
	b := readFile(t, dir, name)[:f.VBMetaOffset]
	b = append(b, blob...)
	b = append(b, make([]byte, (4096-len(blob)%4096)%4096+4096)...)
	copy(b[len(b)-avb.FooterSize:], avb.NewFooter(f.OriginalImageSize, f.VBMetaOffset, uint64(len(blob))).Encode())
	writeFile(t, dir, name, b)
	return len(blob)
}

// worstMade serializes the making of the worst images.
var worstMade sync.Mutex

// worstShapeImage writes dir/name as worstImage makes it for
// worstShapes[shape], made once for all the rows of that shape and kept in
// mainDir: making it (16 MiB of descriptors encoded and signed under
// -race) cost more than most of the commands run on it.
func worstShapeImage(t *testing.T, dir, name string, shape int) {
	t.Helper()
	worstMade.Lock()
	defer worstMade.Unlock()
	kept := fmt.Sprintf("worst-%d.img", shape)
	if b, err := os.ReadFile(filepath.Join(mainDir, kept)); err == nil {
		writeFile(t, dir, name, b)
		return
	}
	worstImage(t, dir, name, worstShapes[shape].more)
	writeFile(t, mainDir, kept, readFile(t, dir, name))
}

// Shapes of the worst vbmetas: what fills about 16 MiB (avb.MaxVBMetaSize)
// with the most descriptors, or the largest ones.
var worstShapes = []struct {
	name string
	more func(room int) []byte
}{
	{"a million descriptors of 16 bytes", func(room int) []byte {
		b := make([]byte, room/16*16)
		for o := 0; o < len(b); o += 16 {
			binary.BigEndian.PutUint64(b[o:], 99) // an unknown tag, no body
		}
		return b
	}},
	{"300,000 properties", func(room int) []byte {
		var b []byte
		for i := 0; i < 300000; i++ {
			b = append(b, (&avb.PropertyDescriptor{Key: "k", Value: []byte("v")}).Encode()...)
		}
		return b
	}},
	{"a property of 16 MiB", func(room int) []byte {
		return (&avb.PropertyDescriptor{Key: "big", Value: bytes.Repeat([]byte("a"), room-64)}).Encode()
	}},
	{"80,000 hashtree descriptors", func(room int) []byte {
		var b []byte
		for i := 0; i < 80000; i++ {
			b = append(b, (&avb.HashtreeDescriptor{DMVerityVersion: 1, HashAlgorithm: "sha256", PartitionName: fmt.Sprintf("p%05d", i)}).Encode()...)
		}
		return b
	}},
	{"170,000 chain partition descriptors", func(room int) []byte {
		var b []byte
		for i := 0; len(b)+96 <= room; i++ {
			b = append(b, (&avb.ChainPartitionDescriptor{RollbackIndexLocation: 1, PartitionName: fmt.Sprintf("c%d", i)}).Encode()...)
		}
		return b
	}},
	{"a salt of 16 MiB", func(room int) []byte {
		return (&avb.HashDescriptor{HashAlgorithm: "sha256", PartitionName: "boot", Salt: make([]byte, room-256)}).Encode()
	}},
	{"500,000 kernel command lines", func(room int) []byte {
		var b []byte
		for i := 0; i < 500000; i++ {
			b = append(b, (&avb.KernelCmdlineDescriptor{Cmdline: "x"}).Encode()...)
		}
		return b
	}},
}

// longInfo are the shapes whose info_image text is tens of MB: a line or
// more for each of 80,000 to a million descriptors.
var longInfo = map[string]bool{"a million descriptors of 16 bytes": true, "80,000 hashtree descriptors": true,
	"170,000 chain partition descriptors": true, "500,000 kernel command lines": true}

// worstVBMetaRows: every command that reads a vbmeta, on the worst ones,
// under 64 MiB of peak RSS (as every row).
func worstVBMetaRows() []attack {
	var rows []attack
	for i, s := range worstShapes {
		setup := func(t *testing.T, d string) { worstShapeImage(t, d, "system.img", i) }
		row := func(what string, exit []int, mayChange []string, prog string, args ...string) attack {
			return attack{item: "19.10", name: s.name + ": " + what, setup: setup, prog: prog, args: args, exit: exit,
				mayChange: mayChange, timeout: 2 * time.Minute}
		}
		// veritycheck decides as libavb, which loads at most 64 KiB of
		// vbmeta: refused, in bounded memory all the same.
		refused := func(a attack) attack {
			a.stderr = []string{`libavb loads at most 65536`}
			return a
		}
		info := row("info_image", []int{0}, nil, "avbtool", "info_image", "--image", "system.img")
		infoOutput := row("info_image --output", []int{0}, []string{"info.txt"}, "avbtool", "info_image", "--image", "system.img", "--output", "info.txt")
		if longInfo[s.name] {
			// Tens of MB of text; avb's TestWorstVBMetaWalkMemory bounds
			// what the walk and the text take (on a sixteenth of the
			// million with -short), and -short still runs info_image on
			// 300,000 properties and on the two single 16 MiB descriptors.
			info.long = "info_image's tens of MB of text on " + s.name
			infoOutput.long = info.long
		}
		rows = append(rows,
			refused(row("veritycheck", []int{2}, nil, "veritycheck", "system.img")),
			refused(row("veritycheck --json", []int{2}, nil, "veritycheck", "--json", "system.img")),
			info,
			row("verify_image", []int{0, 1}, nil, "avbtool", "verify_image", "--image", "system.img"),
		)
		if i > 0 {
			continue // the other commands on the million descriptors only
		}
		rows = append(rows,
			infoOutput,
			row("calculate_kernel_cmdline", []int{0}, nil, "avbtool", "calculate_kernel_cmdline", "--image", "system.img"),
			row("erase_footer", []int{0}, []string{"system.img"}, "avbtool", "erase_footer", "--image", "system.img"),
			row("add_hashtree_footer again", []int{0}, []string{"system.img"}, "avbtool", "add_hashtree_footer", "--image", "system.img",
				"--hash_algorithm", "sha256", "--do_not_generate_fec"),
		)
	}
	include := func(shape int) func(t *testing.T, d string) {
		return func(t *testing.T, d string) {
			worstShapeImage(t, d, "system.img", shape)
			randomFile(t, d, "d.img", mib, 45)
		}
	}
	incl := []string{"add_hashtree_footer", "--image", "d.img", "--do_not_generate_fec", "--include_descriptors_from_image", "system.img"}
	return append(rows,
		attack{item: "19.10", name: "--include_descriptors_from_image of a million descriptors",
			setup: include(0), prog: "avbtool", args: incl, exit: []int{0}, mayChange: []string{"d.img"}, timeout: 2 * time.Minute},
		attack{item: "19.10", name: "--include_descriptors_from_image of 80,000 hashtree descriptors",
			setup: include(3), prog: "avbtool", args: incl, exit: []int{0}, mayChange: []string{"d.img"}, timeout: 2 * time.Minute},
		attack{item: "19.10", name: "--include_descriptors_from_image of 170,000 chain partition descriptors",
			setup: include(4), prog: "avbtool", args: incl, exit: []int{0}, mayChange: []string{"d.img"}, timeout: 2 * time.Minute},
		attack{item: "19.10", name: "the kernel command line of 500,000 descriptors",
			setup: func(t *testing.T, d string) { worstShapeImage(t, d, "system.img", 6) },
			prog:  "avbtool", args: []string{"calculate_kernel_cmdline", "--image", "system.img"}, exit: []int{0}, timeout: 2 * time.Minute,
			after: func(t *testing.T, d string, o *outcome) {
				if len(o.stdout) != 2*500000-1 {
					t.Errorf("a command line of %d bytes, want %d", len(o.stdout), 2*500000-1)
				}
			}},
		attack{item: "19.10", name: "a 16 MiB vbmeta chaining to itself, verify_image --follow_chain_partitions",
			setup: func(t *testing.T, d string) {
				worstImage(t, d, "system.img", func(room int) []byte {
					chain := (&avb.ChainPartitionDescriptor{RollbackIndexLocation: 1, PartitionName: "system", PublicKey: make([]byte, 520)}).Encode()
					pad := (&avb.PropertyDescriptor{Key: "pad", Value: make([]byte, room-len(chain)-64)}).Encode()
					return append(chain, pad...)
				})
			},
			prog: "avbtool", args: []string{"verify_image", "--image", "system.img", "--follow_chain_partitions"}, exit: []int{1},
			stderr: []string{`take more than`}, timeout: 2 * time.Minute},
	)
}
