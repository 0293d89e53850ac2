package main

import (
	"os"

	"golang.org/x/sys/unix"
)

// noEcho turns the echo of the terminal f off, for a password typed
// there. ok is false when f is not a terminal (a pipe, a file), which is
// then left alone; otherwise restore puts the echo back as it was.
func noEcho(f *os.File) (restore func(), ok bool) {
	fd := int(f.Fd())
	old, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err != nil {
		return nil, false
	}
	quiet := *old
	quiet.Lflag &^= unix.ECHO
	quiet.Lflag |= unix.ICANON | unix.ECHONL
	if err := unix.IoctlSetTermios(fd, unix.TCSETS, &quiet); err != nil {
		return nil, false
	}
	return func() { unix.IoctlSetTermios(fd, unix.TCSETS, old) }, true
}
