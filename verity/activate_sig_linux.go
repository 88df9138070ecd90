package verity

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/veritytree/veritytree/merkle"
)

// signatureKeyDescription is the description under which veritysetup
// puts a root hash signature into the keyring (crypt_activate_by_signed_key):
// cryptsetup:<the superblock's UUID, with dashes>-<name>, or
// cryptsetup:<name> without a superblock.
func signatureKeyDescription(g *merkle.Geometry, name string) string {
	if !g.Superblock {
		return "cryptsetup:" + name
	}
	u := g.UUID
	return fmt.Sprintf("cryptsetup:%x-%x-%x-%x-%x-%s", u[0:4], u[4:6], u[6:8], u[8:10], u[10:16], name)
}

// addKey is add_key(2); tests put a failing one in its place.
var addKey = unix.AddKey

// addSignatureKey adds the signature to the calling thread's keyring as a
// "user" key, as veritysetup does; the caller has locked its OS thread.
// Its error is a KindSystem one about RootHashSignature, wrapping
// add_key's errno (ENOSYS: a kernel without keyrings).
func addSignatureKey(description string, sig []byte) (int, error) {
	id, err := addKey("user", description, sig, unix.KEY_SPEC_THREAD_KEYRING)
	if err != nil {
		hint := ""
		if errors.Is(err, unix.ENOSYS) {
			hint = "the kernel needs its keyring (CONFIG_KEYS) for root hash signatures"
		}
		e := causedErrorf(KindSystem, err, "adding the root hash signature to the kernel's keyring: %v", err)
		e.Field, e.Hint = "RootHashSignature", hint
		return 0, e
	}
	return id, nil
}

// dropSignatureKey revokes the key and unlinks it from the thread's
// keyring, as veritysetup does once the table is loaded.
func dropSignatureKey(id int) {
	unix.KeyctlInt(unix.KEYCTL_REVOKE, id, 0, 0, 0)
	unix.KeyctlInt(unix.KEYCTL_UNLINK, id, unix.KEY_SPEC_THREAD_KEYRING, 0, 0)
}
