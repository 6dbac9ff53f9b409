package cli

import (
	"os"
	"syscall"
	"unsafe"
)

// isTerminal asks the terminal driver (TCGETS), which only a terminal
// answers; /dev/null is a character device too, so the file mode is no
// test.
func isTerminal(f *os.File) bool {
	var t syscall.Termios
	_, _, errno := syscall.Syscall(syscall.SYS_IOCTL, f.Fd(), syscall.TCGETS, uintptr(unsafe.Pointer(&t)))
	return errno == 0
}
