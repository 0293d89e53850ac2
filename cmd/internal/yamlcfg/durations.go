package yamlcfg

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"vodcluster/cmd/internal/durflag"
)

// DurText is a duration of a configuration file as the operator wrote
// it: its text, the line it is on and what it is.
type DurText struct {
	Text string        // as written: "1d", "90s", "0"
	Line int           // its line in the file, 1 the first (an alias's, not its anchor's)
	D    time.Duration // what it is
}

// DurTexts are a file's durations as written, by their key's path
// (Options); a key may be written more than once (in a map a merge key
// brings in, and over it; in the items of a list).
type DurTexts map[string][]DurText

// Under returns the durations of d under the section path, by their path
// in it ("manager" gives "store.leader_ttl" of
// "manager.store.leader_ttl"); nil when there are none.
func (d DurTexts) Under(section string) DurTexts {
	var out DurTexts
	for p, ts := range d {
		if rest, ok := strings.CutPrefix(p, section+"."); ok {
			if out == nil {
				out = DurTexts{}
			}
			out[rest] = ts
		}
	}
	return out
}

// Show names the duration v of the key at path, called name, as the
// operator wrote it when the file has it so ("line 12: session_timeout
// 9999ms"), else readably ("session_timeout 9.999s", "token_ttl 1h",
// not "1h0m0s": durflag.Readable).
func (d DurTexts) Show(path, name string, v time.Duration) string {
	for _, t := range d[path] {
		if t.D == v {
			return fmt.Sprintf("line %d: %s %s", t.Line, name, t.Text)
		}
	}
	return name + " " + durflag.Readable(v)
}

// durationType is the Go type of the configurations' durations.
var durationType = reflect.TypeOf(time.Duration(0))

// durations reads each duration of top, the configuration file's first
// document, a value of type t, as durflag does for the duration flags: a
// Go duration ("90s", "1h30m"), or whole days and then, optionally, one
// ("7d", "1d12h"), or a bare 0. It returns a message for each that is
// none ("line N: KEY TEXT: ...", KEY named by o.DurationKey), the texts
// of the good ones by path, and whether it wrote any in days, or a bare
// 0, again in Go's form in top (the YAML decoder reads Go's form only,
// and a 0 as a number): top then decodes to the values written.
func durations(top *yaml.Node, t reflect.Type, o Options) (bad []string, texts DurTexts, rewrote bool) {
	texts = DurTexts{}
	// A scalar written once and used again (&z 0, then *z) may be a
	// duration at one use and a count or a name at another: each use
	// gets its own copy, so that rewriting the duration's leaves the
	// others as written.
	copyAliasedScalars(top)
	written := map[*yaml.Node]string{} // a scalar's text before it was rewritten (an anchor's, used again)
	eachValue(top, t, "", func(n, at *yaml.Node, t reflect.Type, path string) {
		if t != durationType || n.ShortTag() == "!!null" {
			return
		}
		text, seen := written[n]
		if !seen {
			text = n.Value
		}
		d, err := durflag.Parse(text)
		if errors.Is(err, durflag.ErrTooLong) { // written with its unit: not "write it with its unit"
			bad = append(bad, fmt.Sprintf("line %d: %s %s: too long: %v (about 292 years)", at.Line, o.durationKey(path), text, durflag.ErrTooLong))
			return
		}
		if err != nil {
			bad = append(bad, fmt.Sprintf("line %d: %s %s: not a duration: write it with its unit, like 60s, 5m, 3h or 7d (days)", at.Line, o.durationKey(path), text))
			return
		}
		texts[path] = append(texts[path], DurText{Text: text, Line: at.Line, D: d})
		if _, err := time.ParseDuration(n.Value); err != nil || n.ShortTag() != "!!str" { // days, or a bare 0: for the decoder
			written[n] = text
			n.Value, n.Tag, rewrote = d.String(), "!!str", true
		}
	})
	return bad, texts, rewrote
}

// copyAliasedScalars replaces each alias of a scalar in n (*z of &z 0)
// by a copy of the scalar at the alias's place (its line and column), so
// that no scalar stands for two values. Aliases of lists and mappings
// are left as they are.
func copyAliasedScalars(n *yaml.Node) {
	if n == nil {
		return
	}
	if n.Kind == yaml.AliasNode {
		if a := n.Alias; a != nil && a.Kind == yaml.ScalarNode {
			c := *a
			c.Anchor, c.Line, c.Column = "", n.Line, n.Column
			c.HeadComment, c.LineComment, c.FootComment = n.HeadComment, n.LineComment, n.FootComment
			*n = c
		}
		return
	}
	for _, c := range n.Content {
		copyAliasedScalars(c)
	}
}

// WriteDurations writes each duration of doc, a document encoded from a
// value of type t (its durations in Go's form: "720h0m0s", "1m30s"), as
// an operator writes it and Decode reads it back (durflag.Written:
// "30d", "1m30s", "1h"), so that a printed configuration file reads as
// one written by hand and prints the same again.
func WriteDurations(doc *yaml.Node, t reflect.Type) {
	eachValue(doc, t, "", func(n, _ *yaml.Node, t reflect.Type, _ string) {
		if t != durationType || n.ShortTag() == "!!null" {
			return
		}
		if d, err := time.ParseDuration(n.Value); err == nil {
			n.Value, n.Tag, n.Style = durflag.Written(d), "!!str", 0
		}
	})
}
