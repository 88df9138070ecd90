// Package safety holds tests only: the attacks of issue 12 run as a table
// against the built veritygen and veritycheck, each on inputs made on the
// fly, with the sha256 of every file before and after, the exit code, the
// messages, the peak RSS and a time limit. See safety_test.go.
package safety
