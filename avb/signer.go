package avb

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/veritytree/veritytree/internal/safefile"
	"github.com/veritytree/veritytree/verity"
)

// Signer signs vbmeta blobs: the private key itself (KeySigner), or a
// program that holds it (HelperSigner, avbtool's --signing_helper), so
// that a key kept in an HSM or a KMS never touches the disk.
type Signer interface {
	// PublicKey is the key the signature verifies with; its AVB blob goes
	// into the vbmeta, and its size is checked against the algorithm
	// before Sign is called.
	PublicKey() *rsa.PublicKey
	// Sign returns the PKCS#1 v1.5 signature of digest (alg's hash of the
	// header and the auxiliary block), alg.SignatureSize bytes.
	Sign(ctx context.Context, alg *Algorithm, digest []byte) ([]byte, error)
}

// KeySigner signs with a private key in memory.
type KeySigner struct{ Key *rsa.PrivateKey }

// PublicKey returns the key's public part.
func (s KeySigner) PublicKey() *rsa.PublicKey { return &s.Key.PublicKey }

// Sign signs digest with the key. PKCS#1 v1.5 is deterministic: the bytes
// are those of avbtool's openssl rsautl -sign -raw over the padded digest.
func (s KeySigner) Sign(_ context.Context, alg *Algorithm, digest []byte) ([]byte, error) {
	sig, err := rsa.SignPKCS1v15(rand.Reader, s.Key, alg.Hash, digest)
	if err != nil {
		return nil, &verity.Error{Kind: verity.KindParam, Field: "Key", Hint: "check that the key is a whole RSA private key, e.g. with openssl rsa -check -in KEY",
			Err: &causedError{msg: fmt.Sprintf("the key cannot sign with %s", alg.Name), cause: err}}
	}
	return sig, nil
}

// ErrSigningHelper is the cause of every failure of a signing helper: it
// could not be run, it exited with an error, or its signature has the
// wrong length.
var ErrSigningHelper = errors.New("the signing helper failed")

// maxHelperStderr bounds what is kept of a signing helper's stderr for its
// error message.
const maxHelperStderr = 4096

// HelperSigner signs by running a program, as avbtool's --signing_helper
// runs it: Program ALGORITHM KEY, the block to sign (alg's padding then the
// digest, as many bytes as the signature) on its stdin, the signature on
// its stdout. With WithFiles (avbtool's --signing_helper_with_files), it
// runs Program ALGORITHM KEY FILE, the block in FILE, which the program
// overwrites with the signature. The run ends (the program killed) with
// ctx.
type HelperSigner struct {
	Program string
	// Algorithm names are avbtool's (SHA256_RSA4096, ...); KeyPath is
	// passed as is (avbtool passes its --key, which may then be a public
	// key).
	KeyPath string
	// Public is the public key of the key KeyPath names.
	Public    *rsa.PublicKey
	WithFiles bool
	// Stderr, if not nil, receives the program's stderr (which is also
	// kept, up to 4 KiB, for the error if it fails).
	Stderr io.Writer
}

// PublicKey returns Public.
func (s *HelperSigner) PublicKey() *rsa.PublicKey { return s.Public }

// Sign runs the program on the padded digest.
func (s *HelperSigner) Sign(ctx context.Context, alg *Algorithm, digest []byte) ([]byte, error) {
	block := append(alg.padding(), digest...)
	stderr := &limitedBuffer{limit: maxHelperStderr}
	var errOut io.Writer = stderr
	if s.Stderr != nil {
		errOut = io.MultiWriter(stderr, s.Stderr)
	}
	if s.WithFiles {
		return s.signWithFile(ctx, alg, block, stderr, errOut)
	}
	cmd := s.command(ctx, alg.Name, s.KeyPath)
	cmd.Stdin = bytes.NewReader(block)
	// One byte more than the signature tells a long one; the rest is
	// counted, not kept.
	stdout := &limitedBuffer{limit: alg.SignatureSize + 1}
	cmd.Stdout, cmd.Stderr = stdout, errOut
	if err := s.run(ctx, cmd, stderr); err != nil {
		return nil, err
	}
	return s.check(alg, stdout.buf.Bytes(), stdout.total, "on its stdout")
}

func (s *HelperSigner) signWithFile(ctx context.Context, alg *Algorithm, block []byte, stderr *limitedBuffer, errOut io.Writer) ([]byte, error) {
	f, err := os.CreateTemp("", "avbsign-*")
	if err != nil {
		return nil, ioErr("making the signing helper's file: %v", unwrapPathErr(err))
	}
	defer os.Remove(f.Name())
	_, err = f.Write(block)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, ioErr("writing the signing helper's file %s: %v", f.Name(), unwrapPathErr(err))
	}
	cmd := s.command(ctx, alg.Name, s.KeyPath, f.Name())
	cmd.Stdout, cmd.Stderr = errOut, errOut
	if err := s.run(ctx, cmd, stderr); err != nil {
		return nil, err
	}
	g, err := os.Open(f.Name())
	if err != nil {
		return nil, ioErr("reading the signing helper's file %s: %v", f.Name(), unwrapPathErr(err))
	}
	defer g.Close()
	sig := &limitedBuffer{limit: alg.SignatureSize + 1}
	if _, err := io.Copy(sig, g); err != nil {
		return nil, ioErr("reading the signing helper's file %s: %v", f.Name(), unwrapPathErr(err))
	}
	return s.check(alg, sig.buf.Bytes(), sig.total, "in its file")
}

// helperWaitDelay is how long a killed helper's children may keep its
// pipes open before they are closed under them.
const helperWaitDelay = time.Second

func (s *HelperSigner) command(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, s.Program, args...)
	cmd.WaitDelay = helperWaitDelay
	return cmd
}

// run runs the helper; a failure names it and quotes its stderr.
func (s *HelperSigner) run(ctx context.Context, cmd *exec.Cmd, stderr *limitedBuffer) error {
	err := cmd.Run()
	if err == nil {
		return nil
	}
	if ctx.Err() != nil {
		return &verity.Error{Kind: verity.KindIO, Err: fmt.Errorf("signing helper %s: %w", s.Program, ctx.Err())}
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		msg := strings.TrimSpace(stderr.buf.String())
		if msg == "" {
			msg = "(nothing on stderr)"
		}
		return &verity.Error{Kind: verity.KindIO, Hint: "the message after the colon is the helper's",
			Err: &HelperError{Program: s.Program, ExitCode: ee.ExitCode(), Stderr: stderr.buf.Bytes(), msg: fmt.Sprintf("signing helper %s failed (%s): %s", s.Program, ee.ProcessState, msg)}}
	}
	return &verity.Error{Kind: verity.KindParam, Field: "SigningHelper", Hint: "give the path of an executable program",
		Err: &HelperError{Program: s.Program, ExitCode: -1, msg: fmt.Sprintf("signing helper %s cannot be run: %v", s.Program, safefile.Cause(errors.Unwrap(err)))}}
}

// check takes the signature the helper gave if it has the right length.
func (s *HelperSigner) check(alg *Algorithm, sig []byte, total int64, where string) ([]byte, error) {
	if total != int64(alg.SignatureSize) {
		return nil, &verity.Error{Kind: verity.KindIO, Hint: fmt.Sprintf("a %s signature is %d bytes, raw (not base64, not DER)", alg.Name, alg.SignatureSize),
			Err: &HelperError{Program: s.Program, Length: total, msg: fmt.Sprintf("signing helper %s gave a signature of %d bytes %s, not %d", s.Program, total, where, alg.SignatureSize)}}
	}
	return sig, nil
}

// HelperError is a signing helper's failure, with its facts.
type HelperError struct {
	Program string
	// ExitCode is the program's exit code (-1 if it could not be run or
	// was killed); 0 when it ran well but gave a signature of Length
	// bytes.
	ExitCode int
	Length   int64
	// Stderr is the start of what the program wrote on its stderr.
	Stderr []byte
	msg    string
}

func (e *HelperError) Error() string { return e.msg }
func (e *HelperError) Unwrap() error { return ErrSigningHelper }

// limitedBuffer keeps the first limit bytes written to it and counts them
// all.
type limitedBuffer struct {
	buf   bytes.Buffer
	limit int
	total int64
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	b.total += int64(len(p))
	if room := b.limit - b.buf.Len(); room > 0 {
		b.buf.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}
