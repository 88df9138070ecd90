package veritycheck

// The JSON report with its problems streamed: an image overwritten whole
// has a problem per block, and --max-problems=-1 wants them all.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"

	"github.com/veritytree/veritytree/internal/cli"
)

// problemsMarker stands for the problems in the JSON report until they are
// streamed into it.
const problemsMarker = `"veritycheck:problems"`

// writeResult writes the JSON report as writeJSON would with res.Problems
// holding every problem of list, but streams them: list calls emit for each.
func writeResult(w io.Writer, res *result, list func(emit func(problem) error) error) error {
	res.Problems = json.RawMessage(problemsMarker)
	var head bytes.Buffer
	if err := cli.WriteJSON(&head, res); err != nil {
		return err
	}
	key := []byte(`"problems": ` + problemsMarker)
	at := bytes.Index(head.Bytes(), key)
	if at < 0 {
		return fmt.Errorf("internal error: no problems in the JSON report")
	}
	bw := bufio.NewWriter(w)
	bw.Write(head.Bytes()[:at+len(key)-len(problemsMarker)])
	bw.WriteString("[")
	n := 0
	err := list(func(p problem) error {
		b, err := json.MarshalIndent(p, "    ", "  ")
		if err != nil {
			return err
		}
		if n > 0 {
			bw.WriteString(",")
		}
		bw.WriteString("\n    ")
		n++
		_, err = bw.Write(b)
		return err
	})
	if err != nil {
		return err
	}
	if n > 0 {
		bw.WriteString("\n  ")
	}
	bw.WriteString("]")
	bw.Write(head.Bytes()[at+len(key):])
	return bw.Flush()
}
