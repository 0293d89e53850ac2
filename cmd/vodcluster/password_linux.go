package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// ttyPrompt reads lines from a terminal whose echo it has turned off
// (typed characters are not shown, the newline is). Until Close, a
// SIGINT, SIGQUIT or SIGTERM puts the echo back and ends the process
// with 128 + the signal's number, as a shell reports it; a SIGTSTP
// (Ctrl-Z) puts the echo back and stops the process (by SIGSTOP), and
// when it is continued the echo goes off again and the prompt is shown again.
// Without this the terminal was left with echo off by Ctrl-\ or Ctrl-Z.
type ttyPrompt struct {
	fd   int
	r    *bufio.Reader
	w    io.Writer // where the prompts go (standard error)
	old  unix.Termios
	sig  chan os.Signal
	cont chan os.Signal // SIGCONT: continued after a stop
	done chan struct{}
	stop sync.Once

	mu     sync.Mutex
	prompt string // the prompt shown, again after a stop
}

// openTTYPrompt turns the echo of the terminal f off and returns the
// prompt reading from it, prompts written to w. ok is false when f is not
// a terminal (a pipe, a file), which is then left alone.
func openTTYPrompt(f *os.File, w io.Writer) (p *ttyPrompt, ok bool) {
	fd := int(f.Fd())
	old, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err != nil {
		return nil, false
	}
	t := &ttyPrompt{fd: fd, r: bufio.NewReader(f), w: w, old: *old,
		sig: make(chan os.Signal, 1), cont: make(chan os.Signal, 1), done: make(chan struct{})}
	// Watched before the echo goes off: no signal finds it off unwatched.
	signal.Notify(t.sig, os.Interrupt, syscall.SIGQUIT, syscall.SIGTERM, syscall.SIGTSTP)
	signal.Notify(t.cont, syscall.SIGCONT)
	if err := t.quiet(); err != nil {
		signal.Stop(t.sig)
		signal.Stop(t.cont)
		return nil, false
	}
	go t.watch()
	return t, true
}

// quiet turns the echo off: no character is shown but the newline, and
// lines are still edited by the terminal (canonical mode).
func (t *ttyPrompt) quiet() error {
	q := t.old
	q.Lflag &^= unix.ECHO
	q.Lflag |= unix.ICANON | unix.ECHONL
	return unix.IoctlSetTermios(t.fd, unix.TCSETS, &q)
}

// restore puts the terminal's settings back as they were.
func (t *ttyPrompt) restore() { unix.IoctlSetTermios(t.fd, unix.TCSETS, &t.old) }

// watch handles the signals until Close.
func (t *ttyPrompt) watch() {
	for {
		select {
		case <-t.done:
			return
		case s := <-t.sig:
			t.mu.Lock()
			t.restore()
			if s != syscall.SIGTSTP {
				fmt.Fprintln(t.w)
				os.Exit(128 + int(s.(syscall.Signal)))
			}
			// Stop as Ctrl-Z does without a handler. Not by SIGTSTP:
			// once notified, the Go runtime keeps its handler for it,
			// which drops it. Continued (fg, SIGCONT), the echo goes off
			// again.
			for len(t.cont) > 0 {
				<-t.cont
			}
			unix.Kill(os.Getpid(), unix.SIGSTOP)
			<-t.cont
			select {
			case <-t.done: // closed meanwhile: the echo stays on
			default:
				t.quiet()
				fmt.Fprint(t.w, "\n"+t.prompt)
			}
			t.mu.Unlock()
		}
	}
}

// ReadLine implements passwordPrompt.
func (t *ttyPrompt) ReadLine(prompt string) (string, error) {
	t.mu.Lock()
	t.prompt = prompt
	fmt.Fprint(t.w, prompt)
	t.mu.Unlock()
	line, err := t.r.ReadString('\n')
	return strings.TrimRight(line, "\r\n"), err
}

// Close stops watching the signals and puts the echo back.
func (t *ttyPrompt) Close() {
	t.stop.Do(func() {
		signal.Stop(t.sig)
		signal.Stop(t.cont)
		t.mu.Lock()
		close(t.done)
		t.restore()
		t.mu.Unlock()
	})
}
