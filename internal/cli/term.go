package cli

import (
	"os"

	"golang.org/x/sys/unix"
)

func isTerminal(fd int) bool {
	_, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	return err == nil
}

// terminalWidth is the number of columns of the terminal f is
// (TIOCGWINSZ), or defaultWidth when it does not say.
func terminalWidth(f *os.File) int {
	ws, err := unix.IoctlGetWinsize(int(f.Fd()), unix.TIOCGWINSZ)
	if err != nil || ws.Col == 0 {
		return defaultWidth
	}
	return int(ws.Col)
}
