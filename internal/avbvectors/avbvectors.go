// Package avbvectors reads the known answers of avbtool 1.3.0 kept in
// avb/testdata/vectors (see its README.md), for the tests of package avb
// and of the avbtool front.
package avbvectors

import (
	"bytes"
	"fmt"
	"os"
	"strings"

	"github.com/veritytree/veritytree/testimages"
)

// headers are the first fields of the column-name lines of the vector
// files (keys.tsv names its columns in its comment line instead).
var headers = map[string]bool{"name": true, "case": true, "partition_size": true}

// ReadTSV returns the rows of a tab-separated vector file, without its
// comment lines and its column-name line.
func ReadTSV(path string) ([][]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var rows [][]string
	for i, line := range strings.Split(strings.TrimRight(string(b), "\n"), "\n") {
		fields := strings.Split(line, "\t")
		if strings.HasPrefix(line, "#") || i < 2 && headers[fields[0]] {
			continue
		}
		rows = append(rows, fields)
	}
	return rows, nil
}

// Image returns the bytes of an image in the vectors' notation: parts of
// testimages.FromSpec joined by "+" (not "sparse:", whose files are
// stored).
func Image(spec string) ([]byte, error) {
	var out bytes.Buffer
	for _, part := range strings.Split(spec, "+") {
		if err := testimages.FromSpec(&out, part); err != nil {
			return nil, fmt.Errorf("image %q: %w", spec, err)
		}
	}
	return out.Bytes(), nil
}
