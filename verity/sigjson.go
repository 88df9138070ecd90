package verity

import (
	"bytes"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/veritytree/veritytree/internal/safefile"
	"io"
)

// SignatureJSON is what systemd's verity signature partition holds (the
// Discoverable Partitions Specification's "Verity signature partition",
// as systemd-repart writes it and systemd-dissect reads it).
type SignatureJSON struct {
	// RootHash is "rootHash": the root hash, lower case hex in the JSON.
	RootHash []byte
	// CertificateFingerprint is "certificateFingerprint" (optional): the
	// SHA-256 of the signer's certificate in DER, lower case hex.
	CertificateFingerprint []byte
	// Signature is "signature": the PKCS#7 signature of the root hash
	// (what SignRootHash makes), base64 of its DER.
	Signature []byte
}

// RootHashSignatureJSON returns systemd's verity signature JSON of the
// root hash root and its signature sig made with cert:
// {"rootHash":"...","certificateFingerprint":"...","signature":"..."},
// compact and in that order, as systemd-repart writes it; cert nil leaves
// the (optional) fingerprint out. In a partition the JSON is followed by
// NUL bytes up to a multiple of 4096 bytes (truncate -s %4096 FILE pads a
// file so); ParseRootHashSignatureJSON reads it either way.
func RootHashSignatureJSON(root, sig []byte, cert *x509.Certificate) []byte {
	v := struct {
		RootHash    string `json:"rootHash"`
		Fingerprint string `json:"certificateFingerprint,omitempty"`
		Signature   string `json:"signature"`
	}{RootHash: hex.EncodeToString(root), Signature: base64.StdEncoding.EncodeToString(sig)}
	if cert != nil {
		sum := sha256.Sum256(cert.Raw)
		v.Fingerprint = hex.EncodeToString(sum[:])
	}
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // strings only
	}
	return b
}

// looksLikeSignatureJSON reports whether b starts as a JSON object that
// names a rootHash in its first 4 KiB, or holds nothing but NULs (a
// signature partition zeroed for it).
func looksLikeSignatureJSON(b []byte) bool {
	head := b[:min(len(b), safefile.MaxRecognized)]
	if len(bytes.Trim(head, "\x00")) == 0 {
		return true
	}
	t := bytes.TrimLeft(head, " \t\r\n")
	return len(t) > 0 && t[0] == '{' && bytes.Contains(head, []byte(`"rootHash"`))
}

// ParseRootHashSignatureJSON reads systemd's verity signature JSON, as a
// signature partition holds it (followed by NULs up to its end, and only
// NULs: as systemd, a NUL inside is refused). rootHash and signature are
// required, certificateFingerprint is optional, other fields are ignored;
// a field given twice is refused. Errors are *Error of KindInput.
func ParseRootHashSignatureJSON(b []byte) (*SignatureJSON, error) {
	text := b
	if i := bytes.IndexByte(b, 0); i >= 0 {
		if len(bytes.Trim(b[i:], "\x00")) > 0 {
			return nil, jsonError("a NUL byte inside the JSON (only NULs may follow it, as padding)")
		}
		text = b[:i]
	}
	fields, err := jsonObject(text)
	if err != nil {
		return nil, err
	}
	var out SignatureJSON
	if out.RootHash, err = jsonHex(fields, "rootHash", true); err != nil {
		return nil, err
	}
	if len(out.RootHash) < 20 || len(out.RootHash) > 64 {
		return nil, jsonError(fmt.Sprintf("rootHash has %d bytes: not the root hash of a dm-verity tree", len(out.RootHash)))
	}
	if out.CertificateFingerprint, err = jsonHex(fields, "certificateFingerprint", false); err != nil {
		return nil, err
	}
	if out.CertificateFingerprint != nil && len(out.CertificateFingerprint) != sha256.Size {
		return nil, jsonError("certificateFingerprint is not a SHA-256 (64 hex digits)")
	}
	sig, err := jsonString(fields, "signature", true)
	if err != nil {
		return nil, err
	}
	if out.Signature, err = base64.StdEncoding.DecodeString(sig); err != nil || len(out.Signature) == 0 {
		return nil, jsonError("signature is not base64 of a signature")
	}
	return &out, nil
}

func jsonError(msg string) error {
	return errorf(KindInput, "systemd's signature JSON is {\"rootHash\":HEX,\"certificateFingerprint\":HEX,\"signature\":BASE64}, as Format with RootHashSigning.JSONFile writes it",
		"signature JSON: %s", msg)
}

// jsonObject returns the fields of the one JSON object text holds,
// refusing a field given twice (which a reader may take either way).
func jsonObject(text []byte) (map[string]json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(text))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, jsonError("not a JSON object")
	}
	fields := map[string]json.RawMessage{}
	for dec.More() {
		t, err := dec.Token()
		key, ok := t.(string)
		if err != nil || !ok {
			return nil, jsonError("not valid JSON")
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, jsonError("not valid JSON")
		}
		if _, dup := fields[key]; dup {
			return nil, jsonError(fmt.Sprintf("field %q given twice", key))
		}
		fields[key] = v
	}
	if t, err := dec.Token(); err != nil || t != json.Delim('}') {
		return nil, jsonError("not valid JSON")
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, jsonError("more than one JSON value")
	}
	return fields, nil
}

func jsonString(fields map[string]json.RawMessage, key string, required bool) (string, error) {
	raw, ok := fields[key]
	if !ok {
		if required {
			return "", jsonError(fmt.Sprintf("no %q field", key))
		}
		return "", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", jsonError(fmt.Sprintf("%q is not a string", key))
	}
	return s, nil
}

func jsonHex(fields map[string]json.RawMessage, key string, required bool) ([]byte, error) {
	s, err := jsonString(fields, key, required)
	if err != nil || s == "" && !required {
		return nil, err
	}
	b, err := hex.DecodeString(s)
	if err != nil || len(b) == 0 {
		return nil, jsonError(fmt.Sprintf("%q is not hex", key))
	}
	return b, nil
}
