// Package signhelper is vectors2's helper.py (avb/testdata/vectors2) in
// Go, for tests that run avbtool's cases with --signing_helper: the test
// binary, run again, is the helper.
package signhelper

import (
	"context"
	"crypto/rsa"
	"crypto/sha256"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/veritytree/veritytree/avb"
)

// env, set, makes the test binary the signing helper.
const env = "VERITYTREE_TEST_SIGNING_HELPER"

// Main is for a TestMain, before m.Run: run as the helper, it does what
// helper.py does and exits; else it makes the programs the tests start
// know that they are the helper.
func Main() {
	if os.Getenv(env) == "" {
		os.Setenv(env, "1")
		return
	}
	// The test binary run again by the test framework (a fuzzing worker
	// inherits the variable) is not the helper: its flags say so.
	for _, a := range os.Args[1:] {
		if strings.HasPrefix(a, "-test.") {
			return
		}
	}
	os.Exit(run(os.Args[1:]))
}

// Program is the helper's path for a case's name for it: the test binary
// for ./helper.py, any other name as it is.
func Program(name string) string {
	if name != "./helper.py" {
		return name
	}
	exe, err := os.Executable()
	if err != nil {
		panic(err)
	}
	return exe
}

// run is helper.py: it logs what it was given to $HELPER_LOG, fails or
// gives a signature a byte short or long as $HELPER_MODE says (hang: waits
// to be killed), else signs the block with the private key KEY names
// (KEY.pub.pem stands for KEY.pem).
func run(args []string) int {
	if len(args) < 2 {
		fmt.Fprintln(os.Stderr, "helper: ALGORITHM KEY [FILE]")
		return 2
	}
	var block []byte
	var err error
	via := "stdin"
	if len(args) == 3 {
		via = "file"
		block, err = os.ReadFile(args[2])
	} else {
		block, err = io.ReadAll(os.Stdin)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := logCall(args, via, block); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	mode := os.Getenv("HELPER_MODE")
	if mode == "hang" { // until killed
		time.Sleep(time.Hour)
	}
	if mode == "fail" {
		fmt.Fprintln(os.Stderr, "helper: no signing today")
		return 3
	}
	sig, err := sign(args[0], args[1], block)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	switch mode {
	case "short":
		sig = sig[:len(sig)-1]
	case "long":
		sig = append(sig, 0)
	}
	if via == "file" {
		err = os.WriteFile(args[2], sig, 0o600)
	} else {
		_, err = os.Stdout.Write(sig)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// logCall appends helper.py's line about the call to $HELPER_LOG, if set.
func logCall(args []string, via string, block []byte) error {
	log := os.Getenv("HELPER_LOG")
	if log == "" {
		return nil
	}
	f, err := os.OpenFile(log, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	fmt.Fprintf(f, "argc=%d alg=%s key=%s via=%s in=%d:%x\n", len(args), args[0], args[1], via, len(block), sha256.Sum256(block))
	return f.Close()
}

func sign(algName, keyPath string, block []byte) ([]byte, error) {
	alg, err := avb.AlgorithmByName(algName)
	if err != nil {
		return nil, err
	}
	keyPath, _ = strings.CutSuffix(keyPath, ".pub.pem")
	keyPath = strings.TrimSuffix(keyPath, ".pem") + ".pem"
	key, err := avb.LoadPrivateKey(context.Background(), keyPath)
	if err != nil {
		return nil, err
	}
	if len(block) < alg.HashSize {
		return nil, fmt.Errorf("helper: a block of %d bytes", len(block))
	}
	return rsa.SignPKCS1v15(nil, key, alg.Hash, block[len(block)-alg.HashSize:])
}
