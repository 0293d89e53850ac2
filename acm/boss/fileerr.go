package boss

import (
	"errors"
	"regexp"
	"strings"

	"go.yaml.in/yaml/v3"
)

// The YAML decoder's messages for a users file, in the file's words.
var (
	// yamlUnknownKey matches the decoder's message for a key a users
	// file does not have ("field pakages not found in type boss.User").
	yamlUnknownKey = regexp.MustCompile(`field (\S+) not found in type \S+`)
	// yamlGoTypes are the Go types the decoder names when a value is of
	// the wrong kind, and what the file calls them.
	yamlGoTypes = strings.NewReplacer(
		"into []boss.User", "into the list of users (users: a list of entries: - name: ...)",
		"into boss.User", "into a user entry (name, bcrypt, ha1, packages)",
		"into boss.fileDoc", "into the file's keys (realm, users)",
		"into []string", "into a list (packages: [a, b])",
		"into string", "into a text",
	)
)

// fileError rewrites err, the YAML decoder's error of a users file, into
// the words of the manager's other configuration files: one line, each
// fault "line N: ..." (several joined by "; "), a key the file does not
// have "unknown key K (misspelt, or under the wrong section?)", a value of
// the wrong kind without the manager's Go type names. A YAML syntax error
// loses the decoder's "yaml: " prefix. It unwraps to err.
func fileError(err error) error {
	var te *yaml.TypeError
	if !errors.As(err, &te) {
		if msg, ok := strings.CutPrefix(err.Error(), "yaml: "); ok {
			return &readError{msg: msg, err: err}
		}
		return err
	}
	lines := make([]string, 0, len(te.Errors))
	for _, e := range te.Errors {
		e = yamlUnknownKey.ReplaceAllString(e, "unknown key $1 (misspelt, or under the wrong section?)")
		lines = append(lines, yamlGoTypes.Replace(e))
	}
	return &readError{msg: strings.Join(lines, "; "), err: err}
}

// readError is a users file's decoding error in the file's words
// (fileError); it unwraps to the decoder's error.
type readError struct {
	msg string
	err error
}

func (e *readError) Error() string { return e.msg }
func (e *readError) Unwrap() error { return e.err }
