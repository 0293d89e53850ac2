//go:build !linux

package main

import (
	"io"
	"os"
)

// ttyPrompt is not made where a terminal's echo cannot be turned off
// here: the password is read from standard input without a prompt.
type ttyPrompt struct{}

// openTTYPrompt reports no terminal (ok false).
func openTTYPrompt(*os.File, io.Writer) (p *ttyPrompt, ok bool) { return nil, false }

// ReadLine implements passwordPrompt; it is never called.
func (*ttyPrompt) ReadLine(string) (string, error) { return "", io.EOF }

// Close does nothing.
func (*ttyPrompt) Close() {}
