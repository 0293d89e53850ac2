package main

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"vodcluster/cmd/internal/durflag"
)

// durText is a duration of the configuration file as the operator wrote
// it: its text, the line it is on and what it is.
type durText struct {
	text string
	line int
	d    time.Duration
}

// durTexts are a section's durations as written, by their key's path in
// the section ("session_timeout", "scheduler.heartbeat_interval"); a key
// may be written more than once (in a map a merge key brings in, and
// over it).
type durTexts map[string][]durText

// durationType is the Go type of the configuration's durations.
var durationType = reflect.TypeOf(time.Duration(0))

// configDurations reads each duration of top, the configuration file's
// first document, as durflag does for the duration flags: a Go duration
// ("90s", "1h30m"), or whole days and then, optionally, one ("7d",
// "1d12h"), or a bare 0 (the default, as "0 or left out" reads). It
// returns a message for each that is none ("line N: KEY TEXT: ..."),
// the texts of the good ones by section ("manager", "node", "cdp"), and
// whether it wrote any given in days again in Go's form in top (the
// YAML decoder reads Go's form only): top then decodes to the values
// written.
func configDurations(top *yaml.Node) (bad []string, texts map[string]durTexts, rewrote bool) {
	texts = map[string]durTexts{}
	written := map[*yaml.Node]string{} // a scalar's text before it was rewritten (an anchor's, used again)
	eachValue(top, reflect.TypeOf(Config{}), "", func(n, at *yaml.Node, t reflect.Type, path string) {
		if t != durationType || n.ShortTag() == "!!null" || (n.ShortTag() == "!!int" && n.Value == "0") {
			return
		}
		text, seen := written[n]
		if !seen {
			text = n.Value
		}
		section, key, _ := strings.Cut(path, ".")
		d, err := durflag.Parse(text)
		if errors.Is(err, durflag.ErrTooLong) { // written with its unit: not "write it with its unit"
			bad = append(bad, fmt.Sprintf("line %d: %s %s: too long: %v (about 292 years)", at.Line, key, text, durflag.ErrTooLong))
			return
		}
		if err != nil {
			bad = append(bad, fmt.Sprintf("line %d: %s %s: not a duration: write it with its unit, like 60s, 5m, 3h or 7d (days)", at.Line, key, text))
			return
		}
		if texts[section] == nil {
			texts[section] = durTexts{}
		}
		texts[section][key] = append(texts[section][key], durText{text: text, line: at.Line, d: d})
		if _, err := time.ParseDuration(n.Value); err != nil { // days: for the decoder
			written[n] = text
			n.Value, n.Tag, rewrote = d.String(), "!!str", true
		}
	})
	return bad, texts, rewrote
}

// show names the duration v of key as the operator wrote it when the
// file has it so ("line 12: session_timeout 9999ms"), else readable
// ("session_timeout 9.999s", "token_ttl 1h", not "1h0m0s").
func (k *keyCheck) show(key string, v time.Duration) string {
	for _, t := range k.durs[key] {
		if t.d == v {
			return fmt.Sprintf("line %d: %s %s", t.line, key, t.text)
		}
	}
	return key + " " + durflag.Readable(v)
}
