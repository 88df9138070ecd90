package verity

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/veritytree/veritytree/merkle"
)

func TestSignatureKeyDescription(t *testing.T) {
	g := &merkle.Geometry{Params: merkle.Params{Superblock: true}}
	g.UUID = [16]byte{0x12, 0x34, 0x56, 0x78, 0x9a, 0xbc, 0xde, 0xf0, 0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef}
	if got, want := signatureKeyDescription(g, "vroot"), "cryptsetup:12345678-9abc-def0-0123-456789abcdef-vroot"; got != want {
		t.Errorf("with a superblock: %q, want %q", got, want)
	}
	g.Superblock = false
	if got, want := signatureKeyDescription(g, "vroot"), "cryptsetup:vroot"; got != want {
		t.Errorf("without a superblock: %q, want %q", got, want)
	}
}

// TestActivateSignatureKey: with a signature, the table names the key
// root_hash_sig_key_desc, the key is in the thread's keyring (holding the
// signature's bytes) while the table loads, and revoked afterwards.
func TestActivateSignatureKey(t *testing.T) {
	requireLoops(t)
	if _, err := unix.KeyctlGetKeyringID(unix.KEY_SPEC_THREAD_KEYRING, true); err != nil {
		t.Skipf("no kernel keyring here: %v", err)
	}
	fx := newFixture(t, 16, 4096, 2, 3)
	fm := newFakeMapper()
	fm.use(t)
	defer noLoopsLeft(t, fx.dataPath, fx.hashPath)
	sig := []byte("not really a PKCS#7 signature")
	desc := signatureKeyDescription(fx.g, "vt-sig")
	key := -1
	fm.onLoad = func(string) {
		id, err := unix.KeyctlSearch(unix.KEY_SPEC_THREAD_KEYRING, "user", desc, 0)
		if err != nil {
			t.Errorf("the key %s is not in the thread's keyring as the table loads: %v", desc, err)
			return
		}
		key = id
		buf := make([]byte, 256)
		n, err := unix.KeyctlBuffer(unix.KEYCTL_READ, id, buf, 0)
		if err != nil || !bytes.Equal(buf[:n], sig) {
			t.Errorf("the key holds %q (%v), want the signature", buf[:min(n, len(buf))], err)
		}
	}
	ctx := context.Background()
	if _, err := Activate(ctx, "vt-sig", fx.dataPath, fx.hashPath, fx.root, &ActivateOptions{RootHashSignature: sig, RootHashSigKey: "x"}); err == nil {
		t.Fatal("a signature and a key description both accepted")
	}
	d, err := Activate(ctx, "vt-sig", fx.dataPath, fx.hashPath, fx.root, &ActivateOptions{RootHashSignature: sig})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close(ctx)
	if !strings.HasSuffix(d.Table, " root_hash_sig_key_desc "+desc) {
		t.Errorf("table %q does not name the key %s", d.Table, desc)
	}
	if key < 0 {
		t.Fatal("the key was not found at load")
	}
	if _, err := unix.KeyctlString(unix.KEYCTL_DESCRIBE, key); err == nil {
		t.Errorf("key %d is still usable after the activation", key)
	}
}

// TestActivateNoKeyring: a kernel without keyrings (add_key: ENOSYS) is a
// KindSystem error about RootHashSignature wrapping ENOSYS, with nothing
// left behind.
func TestActivateNoKeyring(t *testing.T) {
	requireLoops(t)
	fx := newFixture(t, 16, 4096, 2, 3)
	fm := newFakeMapper()
	fm.use(t)
	saved := addKey
	t.Cleanup(func() { addKey = saved })
	addKey = func(string, string, []byte, int) (int, error) { return 0, unix.ENOSYS }
	defer noLoopsLeft(t, fx.dataPath, fx.hashPath)
	_, err := Activate(context.Background(), "vt-nokeys", fx.dataPath, fx.hashPath, fx.root, &ActivateOptions{RootHashSignature: []byte("sig")})
	var e *Error
	if !errors.As(err, &e) || e.Kind != KindSystem || e.Field != "RootHashSignature" || !errors.Is(err, unix.ENOSYS) || !strings.Contains(e.Hint, "CONFIG_KEYS") {
		t.Errorf("Activate without keyrings: %v (%+v)", err, e)
	}
	if len(fm.devs) != 0 {
		t.Errorf("devices left: %v", fm.devs)
	}
}
