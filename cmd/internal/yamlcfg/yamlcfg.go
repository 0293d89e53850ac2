package yamlcfg

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"regexp"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Options say how the messages of Decode name a key, given its path
// from the top of the file: its keys joined by '.', a list's items
// having the list's path and "[]" ("node.session_timeout",
// "demand.kinds[].min_duration"; a scalar in a list has the list's
// path alone). A nil function names a key by its path.
type Options struct {
	// DurationKey names the key of a duration.
	DurationKey func(path string) string
	// Key names the key of any other value (a whole number, a value of
	// the wrong kind, the keys of an alias's uses).
	Key func(path string) string
}

// durationKey and key are o's names of the key at path.
func (o Options) durationKey(path string) string {
	if o.DurationKey == nil {
		return path
	}
	return o.DurationKey(path)
}

func (o Options) key(path string) string {
	if o.Key == nil {
		return path
	}
	return o.Key(path)
}

// File is what Decode read of a configuration file besides its values.
type File struct {
	// Doc is the file's first document as a tree (its durations in days
	// written again in Go's form); its Content is empty for an empty
	// file, and nil when the file is not YAML.
	Doc *yaml.Node
	// Durations are its durations as written, by their key's path (as
	// Options has it).
	Durations DurTexts
	typ       reflect.Type // the configuration's (Show)
}

// Decode reads b, the text of a configuration file, into v, a pointer
// to the configuration's struct: the file's values overlay those v
// holds. Its errors are in the configuration's words, each "line N: ..."
// (several joined by "; "), without the file's name: a key v has no
// field for, a second document (after ---; a trailing --- alone opens
// none), a duration that is none (durflag's forms are taken: "90s",
// "7d", "1d12h", and a bare 0) or too long, quoted as written with its
// key, a number with a fraction (or out of range) where a whole one
// belongs, a value of the wrong kind with its key, and YAML syntax
// errors as the decoder gives them; a file that is a list or a single
// value, not its keys, is refused as such.
func Decode(b []byte, v any, o Options) (*File, error) {
	t := reflect.TypeOf(v)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	// The document as a tree first: its durations are read here (with
	// days, and quoted as written in their errors), then the decoder
	// reads the rest (strict: unknown keys).
	f := &File{typ: t}
	var top yaml.Node
	var durBad []string
	rewrote := false
	if err := yaml.Unmarshal(b, &top); err == nil {
		if err := notMapping(&top); err != nil {
			return nil, err
		}
		f.Doc = &top
		durBad, f.Durations, rewrote = durations(&top, t, o)
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(v); err != nil && !errors.Is(err, io.EOF) { // io.EOF: an empty file
		if err := readableError(err, b, t, o); err != nil {
			if len(durBad) > 0 {
				err = fmt.Errorf("%w; %s", err, strings.Join(durBad, "; "))
			}
			return nil, err
		}
	}
	if len(durBad) > 0 {
		return nil, errors.New(strings.Join(durBad, "; "))
	}
	if rewrote { // a duration in days or a bare 0: the decoder left it as it was
		if err := top.Decode(v); err != nil {
			if err := readableError(err, b, t, o); err != nil {
				return nil, err
			}
		}
	}
	if len(top.Content) > 0 && top.Content[0].Kind == yaml.MappingNode {
		if bad := fractionalInts(&top, t, o); len(bad) > 0 {
			return nil, errors.New(strings.Join(bad, "; "))
		}
	}
	for {
		var more yaml.Node
		err := dec.Decode(&more)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err // a syntax error: a tree has no type errors
		}
		if len(more.Content) > 0 && more.Content[0].Tag != "!!null" {
			// Ignored, it would hide settings the operator believes set.
			return nil, fmt.Errorf("line %d: a second document (after ---): the file holds one YAML document", more.Content[0].Line)
		}
	}
	return f, nil
}

// notMapping is the error for top, a file's first document, when it is
// not a mapping of keys (nor empty): a list or a single value, which the
// decoder named by the configuration's Go type ("cannot unmarshal !!seq
// into sim.Config"); nil when it is one.
func notMapping(top *yaml.Node) error {
	if len(top.Content) == 0 {
		return nil
	}
	n := top.Content[0]
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	var what string
	switch {
	case n.Kind == yaml.MappingNode || n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null":
		return nil
	case n.Kind == yaml.SequenceNode:
		what = "a list"
	case n.Kind == yaml.ScalarNode:
		what = fmt.Sprintf("the single value `%s`", n.Value)
	default:
		return nil // the decoder says what it is
	}
	return fmt.Errorf("line %d: the file is %s: it holds keys with their values, one per line (KEY: VALUE), in their sections", top.Content[0].Line, what)
}

// yamlUnknownField and yamlDuration match the decoder's messages for a
// key the configuration does not have and for a duration it does not
// read (a number, days, a word).
var (
	yamlUnknownField = regexp.MustCompile(`field (\S+) not found in type \S+`)
	yamlDuration     = regexp.MustCompile("cannot unmarshal !!(\\w+) `([^`]*)` into time\\.Duration")
)

// readableError rewrites the YAML decoder's messages that name Go types
// into the configuration's words: "unknown key X". Its messages about a
// duration written as a scalar are left out: durations reads those
// itself (days, and a bare 0, which the decoder leaves as it was and
// goes on) and says what is wrong with the key named; nil when that is
// all. A value of the wrong kind (`20M` for bit/s, `yes please` for a
// bool) is named with its key, looked up in b, the file's text
// (typeErrorInWords). Other errors are returned as they are.
func readableError(err error, b []byte, t reflect.Type, o Options) error {
	var te *yaml.TypeError
	if !errors.As(err, &te) {
		return err
	}
	var doc yaml.Node
	_ = yaml.Unmarshal(b, &doc) // the first document; on an error, keys are not named
	var lines []string
	for _, e := range te.Errors {
		if yamlDuration.MatchString(e) {
			continue // durations' (a bare 0: none)
		}
		if w, ok := typeErrorInWords(e, &doc, t, o); ok {
			if !slices.Contains(lines, w) { // an alias's: at its anchor's line, said once
				lines = append(lines, w)
			}
			continue
		}
		e = yamlUnknownField.ReplaceAllString(e, "unknown key $1 (misspelt, or under the wrong section?)")
		lines = append(lines, e)
	}
	if len(lines) == 0 {
		return nil
	}
	return &configError{msg: strings.Join(lines, "; "), err: err}
}

// configError is a YAML decoding error in the configuration's words; it
// unwraps to the decoder's error.
type configError struct {
	msg string
	err error
}

func (e *configError) Error() string { return e.msg }
func (e *configError) Unwrap() error { return e.err }

// joinKey returns key under path ("" is the top level).
func joinKey(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}
