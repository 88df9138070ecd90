package verity

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"testing"
	"time"
)

func TestKindString(t *testing.T) {
	want := map[Kind]string{KindParam: "param", KindInput: "input", KindCorrupt: "corrupt", KindIO: "io", KindRefused: "refused",
		KindUntrusted: "untrusted", KindSystem: "system", KindCanceled: "canceled", 0: "Kind(0)", 200: "Kind(200)"}
	for k, w := range want {
		if got := fmt.Sprint(k); got != w {
			t.Errorf("Kind %d prints as %q, want %q", uint8(k), got, w)
		}
	}
}

// A missing input is fs.ErrNotExist through every verb that opens one, with
// the *fs.PathError of the path named, and the message in our words.
func TestMissingFileIsErrNotExist(t *testing.T) {
	f := newFixture(t, 8, 4096, 2, 31)
	missing := filepath.Join(f.dir, "missing")
	ctx := context.Background()
	for _, c := range []struct {
		name, msg string
		run       func() error
	}{
		{"Format DATA", "DATA " + missing + " does not exist", func() error {
			_, err := Format(ctx, missing, filepath.Join(f.dir, "out.verity"), nil)
			return err
		}},
		{"Verify DATA", "DATA " + missing + " does not exist", func() error {
			_, err := Verify(ctx, missing, f.hashPath, f.root, nil)
			return err
		}},
		{"Verify HASH", "HASH " + missing + " does not exist", func() error {
			_, err := Verify(ctx, f.dataPath, missing, f.root, nil)
			return err
		}},
		{"Verify FEC", "FEC device " + missing + " does not exist", func() error {
			_, err := Verify(ctx, f.dataPath, f.hashPath, f.root, &VerifyOptions{FECDevice: missing})
			return err
		}},
		{"Open DATA", "DATA " + missing + " does not exist", func() error {
			_, err := Open(missing, f.hashPath, f.root, nil)
			return err
		}},
		{"Open HASH", "HASH " + missing + " does not exist", func() error {
			_, err := Open(f.dataPath, missing, f.root, nil)
			return err
		}},
	} {
		err := c.run()
		var pe *fs.PathError
		var e *Error
		switch {
		case err == nil:
			t.Errorf("%s: no error", c.name)
		case err.Error() != c.msg:
			t.Errorf("%s: %q, want %q", c.name, err, c.msg)
		case !errors.Is(err, fs.ErrNotExist) || !errors.As(err, &pe) || pe.Path != missing:
			t.Errorf("%s: %v does not wrap the *fs.PathError of %s (fs.ErrNotExist)", c.name, err, missing)
		case !errors.As(err, &e) || e.Kind != KindInput || !errors.Is(err, ErrInput):
			t.Errorf("%s: %v is not a KindInput *Error", c.name, err)
		}
	}
}

// A run whose context has ended is the context's error, not ErrIO.
func TestCanceledIsNotErrIO(t *testing.T) {
	f := newFixture(t, 64, 4096, 2, 32)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	deadline, cancel2 := context.WithDeadline(context.Background(), time.Unix(1, 0))
	defer cancel2()
	for _, c := range []struct {
		name string
		ctx  context.Context
		want error
		run  func(ctx context.Context) error
	}{
		{"Format", ctx, context.Canceled, func(ctx context.Context) error {
			_, err := Format(ctx, f.dataPath, filepath.Join(f.dir, "new.verity"), nil)
			return err
		}},
		{"Format with FEC", deadline, context.DeadlineExceeded, func(ctx context.Context) error {
			_, err := Format(ctx, f.dataPath, filepath.Join(f.dir, "new2.verity"), &FormatOptions{FECDevice: filepath.Join(f.dir, "new2.fec")})
			return err
		}},
		{"Verify", ctx, context.Canceled, func(ctx context.Context) error {
			_, err := Verify(ctx, f.dataPath, f.hashPath, f.root, nil)
			return err
		}},
		{"Verify with FEC", ctx, context.Canceled, func(ctx context.Context) error {
			_, err := Verify(ctx, f.dataPath, f.hashPath, f.root, &VerifyOptions{FECDevice: f.fecPath, Repair: true})
			return err
		}},
	} {
		err := c.run(c.ctx)
		var e *Error
		switch {
		case !errors.Is(err, c.want):
			t.Errorf("%s: %v is not %v", c.name, err, c.want)
		case errors.Is(err, ErrIO):
			t.Errorf("%s: %v is ErrIO", c.name, err)
		case errors.As(err, &e) && e.Kind != KindCanceled:
			t.Errorf("%s: %v is of kind %v", c.name, err, e.Kind)
		}
	}
	// An I/O error that wraps a context's end is not ErrIO either.
	if err := asError(KindIO, fmt.Errorf("writing: %w", context.Canceled)); errors.Is(err, ErrIO) || !errors.Is(err, context.Canceled) {
		t.Errorf("%v: ErrIO %v", err, errors.Is(err, ErrIO))
	}
	if err := errorf(KindIO, "", "reading: %v", fs.ErrClosed); !errors.Is(err, ErrIO) {
		t.Errorf("%v is not ErrIO", err)
	}
}
