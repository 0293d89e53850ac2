// Package fileflag names, in an error about a file a command-line flag
// (or an environment variable) gave, the flag as well as the file.
package fileflag

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"
)

// Error names the flag (without its dashes) that gave path in
// err, an error about the file path: a file error named the path alone
// ("open portal-secret: no such file or directory"), not which flag gave
// it. An error that names the flag already, or nil, is returned as it
// is; one that begins with path gets the flag before it; an
// fs.PathError of path is said as "--FLAG PATH: OP: REASON"; any other
// gets "--FLAG PATH: " before it. The result wraps err.
func Error(flag, path string, err error) error {
	return Named("--"+flag, path, err)
}

// Named is Error with what gave path named as it is written: a flag
// with its dashes ("--token-file"), or an environment variable
// ("$VODCTL_TOKEN_FILE").
func Named(name, path string, err error) error {
	if err == nil || strings.HasPrefix(err.Error(), name+" ") || strings.HasPrefix(err.Error(), name+":") {
		return err
	}
	var pe *fs.PathError
	switch {
	case strings.HasPrefix(err.Error(), path+":") || strings.HasPrefix(err.Error(), path+" "):
		return fmt.Errorf("%s %w", name, err)
	case errors.As(err, &pe) && pe.Path == path && err == error(pe):
		return fmt.Errorf("%s %s: %s: %w", name, path, pe.Op, pe.Err)
	}
	return fmt.Errorf("%s %s: %w", name, path, err)
}
