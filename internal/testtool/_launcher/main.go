// Command launcher starts its arguments as a command and reports on fd 3
// the command's pid ("pid N") and then its exit code and peak RSS in KiB
// ("exit CODE RSS"; CODE is -1 if a signal ended it). Tests start the
// commands they measure through it (testtool.RunMeasured, tests/safety).
//
// The peak RSS of a command started directly from a test would not be its
// own: Linux charges an exec'd process with the peak RSS of the memory it
// was forked from, and Go forks by sharing the parent's memory (vfork), so
// every command would count the test's own peak (larger still under the
// race detector). This launcher is a small process of its own. Its
// directory starts with _ so that go install ./... leaves it out.
package main

import (
	"fmt"
	"os"
	"syscall"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: launcher PROGRAM [ARG...] (reports on fd 3)")
		os.Exit(125)
	}
	report := os.NewFile(3, "report")
	p, err := os.StartProcess(os.Args[1], os.Args[1:], &os.ProcAttr{Files: []*os.File{os.Stdin, os.Stdout, os.Stderr}})
	if err != nil {
		fmt.Fprintln(os.Stderr, "launcher:", err)
		os.Exit(125)
	}
	fmt.Fprintf(report, "pid %d\n", p.Pid)
	st, err := p.Wait()
	if err != nil {
		fmt.Fprintln(os.Stderr, "launcher:", err)
		os.Exit(125)
	}
	var rss int64
	if ru, ok := st.SysUsage().(*syscall.Rusage); ok {
		rss = int64(ru.Maxrss) // int32 on 32-bit ARM
	}
	fmt.Fprintf(report, "exit %d %d\n", st.ExitCode(), rss)
}
