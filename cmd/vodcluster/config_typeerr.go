package main

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// yamlCannot matches the decoder's message for a value of the wrong kind:
// its line, the YAML tag and text of the value, and the Go type it
// could not go into.
var yamlCannot = regexp.MustCompile("^line (\\d+): cannot unmarshal !!(\\w+)(?: `([^`]*)`)? into (\\S+)$")

// typeErrorInWords rewrites the decoder's message e for a value of the
// wrong kind ("line 12: cannot unmarshal !!str `20M` into int64", which
// named a Go type and not the key) into the configuration's words, with
// the key the value is written under, looked up in doc, the file's
// parsed document: "line 12: `20M` is not a whole number: write digits
// alone, without a unit or suffix (key egress_bps)". ok is false for a
// message of another form, left as it is. A duration's scalar is not
// seen here: configDurations reads it and names its key.
func typeErrorInWords(e string, doc *yaml.Node) (string, bool) {
	m := yamlCannot.FindStringSubmatch(e)
	if m == nil {
		return "", false
	}
	line, _ := strconv.Atoi(m[1])
	tag, value, into := m[2], m[3], m[4]
	var msg string
	switch {
	case tag == "seq" || tag == "map":
		kind := map[string]string{"seq": "list", "map": "mapping"}[tag]
		msg = fmt.Sprintf("line %d: a %s where a single value belongs", line, kind)
		value = ""
	case strings.HasPrefix(into, "int") || strings.HasPrefix(into, "uint"):
		msg = fmt.Sprintf("line %d: `%s` is not a whole number: write digits alone, without a unit or suffix (bit/s, bytes and counts are integers)", line, value)
	case strings.HasPrefix(into, "float"):
		msg = fmt.Sprintf("line %d: `%s` is not a number", line, value)
	case into == "bool":
		msg = fmt.Sprintf("line %d: `%s` is not true or false", line, value)
	default:
		msg = fmt.Sprintf("line %d: `%s` is not a value this key takes", line, value)
	}
	if key, v := keyAtLine(doc, line, value); key != "" {
		// An alias (*name) of the value is reported at the anchor's
		// line: its keys are named too.
		if uses := aliasUses(doc, v); len(uses) > 0 {
			key += ", and " + strings.Join(uses, ", ") + " by its alias *" + v.Anchor
		}
		msg += " (key " + key + ")"
	}
	return msg, true
}

// keyAtLine returns the key of the mapping entry of doc whose value is
// written at line with text value ("" for a list or a mapping), "" when
// there is none, and that value's node. The innermost such entry wins: a section's mapping
// starts at the line of its first key (node:'s at egress_bps: 20M's
// line), and a flow mapping is on its key's line ({egress_bps: 20M}),
// and the key is the value's, not the section's. A scalar matches a
// scalar only, a list or a mapping one of those.
func keyAtLine(n *yaml.Node, line int, value string) (string, *yaml.Node) {
	if n == nil {
		return "", nil
	}
	for _, c := range n.Content {
		if key, v := keyAtLine(c, line, value); key != "" {
			return key, v
		}
	}
	if n.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if v.Line != line {
				continue
			}
			if (v.Kind == yaml.ScalarNode && v.Value == value) || (value == "" && (v.Kind == yaml.SequenceNode || v.Kind == yaml.MappingNode)) {
				return k.Value, v
			}
		}
	}
	return "", nil
}

// aliasUses lists the keys of doc whose value is an alias of v, "KEY at
// line N", in the document's order; none when v has no anchor.
func aliasUses(n, v *yaml.Node) []string {
	if n == nil || v == nil || v.Anchor == "" {
		return nil
	}
	var out []string
	if n.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(n.Content); i += 2 {
			if a := n.Content[i+1]; a.Kind == yaml.AliasNode && a.Alias == v {
				out = append(out, fmt.Sprintf("%s at line %d", n.Content[i].Value, a.Line))
			}
		}
	}
	for _, c := range n.Content {
		out = append(out, aliasUses(c, v)...)
	}
	return out
}
