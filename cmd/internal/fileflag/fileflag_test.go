package fileflag

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"testing"
)

func TestError(t *testing.T) {
	_, open := os.Open("/nonexistent-dir/f")
	inner := errors.New("bad key")
	for _, c := range []struct {
		err  error
		want string
	}{
		{open, "--key-file /nonexistent-dir/f: open: no such file or directory"},
		{fmt.Errorf("/nonexistent-dir/f: %w", inner), "--key-file /nonexistent-dir/f: bad key"},
		{inner, "--key-file /nonexistent-dir/f: bad key"},
		{errors.New("--key-file /x: named"), "--key-file /x: named"},
		{&fs.PathError{Op: "lstat", Path: "/nonexistent-dir", Err: fs.ErrNotExist}, "--key-file /nonexistent-dir/f: lstat /nonexistent-dir: file does not exist"},
	} {
		got := Error("key-file", "/nonexistent-dir/f", c.err)
		if got.Error() != c.want || !(errors.Is(got, c.err) || errors.Is(got, fs.ErrNotExist)) {
			t.Errorf("%v: %v, want %q", c.err, got, c.want)
		}
	}
	if Error("key-file", "f", nil) != nil {
		t.Error("nil not nil")
	}
}
