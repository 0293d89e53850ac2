package yamlcfg

import (
	"fmt"
	"math"
	"reflect"
	"regexp"
	"slices"
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
// the key the value is written under (named by o.Key), looked up in doc,
// the file's parsed document: "line 12: `20M` is not a whole number:
// write digits alone, without a unit or suffix (key egress_bps)". ok is
// false for a message of another form, left as it is. t, the
// configuration's type, tells a section (a struct) from a single value.
// A duration's scalar is not seen here: durations reads it and names
// its key.
func typeErrorInWords(e string, doc *yaml.Node, t reflect.Type, o Options) (string, bool) {
	m := yamlCannot.FindStringSubmatch(e)
	if m == nil {
		return "", false
	}
	line, _ := strconv.Atoi(m[1])
	tag, value, into := m[2], m[3], m[4]
	if v, ok := untruncated(doc, line, value); ok {
		value = v
	}
	lookup := value
	if tag == "seq" || tag == "map" {
		lookup = ""
	}
	path, _ := keyAtLine(doc, "", line, lookup)
	var at reflect.Type // the value's type: a list's item's for a list's path
	if path != "" {
		at = typeAt(t, path)
	}
	if at != nil && (at.Kind() == reflect.Slice || at.Kind() == reflect.Array) && !strings.HasPrefix(into, "[]") {
		at = at.Elem()
		for at.Kind() == reflect.Pointer {
			at = at.Elem()
		}
	}
	section := at != nil && at.Kind() == reflect.Struct
	var msg, rng string
	switch {
	case section && tag == "seq":
		msg = fmt.Sprintf("line %d: a list where a section belongs: its keys go under it, one per line (KEY: VALUE)", line)
		value = ""
	case section && tag != "map":
		msg = fmt.Sprintf("line %d: `%s` is a single value where a section belongs: its keys go under it, one per line (KEY: VALUE)", line, value)
	case (strings.HasPrefix(into, "int") || strings.HasPrefix(into, "uint")) && outOfRange(tag, value):
		// As fractionalInts says a float out of range, with the key first.
		rng = intRange(into)
		msg = fmt.Sprintf("line %d: %s: out of range (a whole number %s)", line, value, rng)
	case (strings.HasPrefix(into, "int") || strings.HasPrefix(into, "uint") || strings.HasPrefix(into, "float")) && tag == "str" && resolvesTo(value, "!!int", "!!float"):
		msg = fmt.Sprintf("line %d: `%s` is quoted, a text: write the number without quotes", line, value)
	case into == "bool" && tag == "str" && resolvesTo(value, "!!bool"):
		msg = fmt.Sprintf("line %d: `%s` is quoted, a text: write true or false without quotes", line, value)
	case tag == "map" && strings.HasPrefix(into, "[]"):
		msg = fmt.Sprintf("line %d: a mapping where a list belongs: write its items on lines of their own, each starting with '- '", line)
		value = ""
	case tag == "seq" || tag == "map":
		kind := map[string]string{"seq": "list", "map": "mapping"}[tag]
		msg = fmt.Sprintf("line %d: a %s where a single value belongs", line, kind)
		value = ""
	case strings.HasPrefix(into, "[]") && !strings.Contains(into, ".") || into == "[]time.Duration":
		msg = fmt.Sprintf("line %d: `%s` is a single value where a list belongs: write [%s], or its items on lines of their own, each starting with '- '", line, value, value)
	case strings.HasPrefix(into, "[]"): // a list of sections
		msg = fmt.Sprintf("line %d: `%s` is a single value where a list belongs: write its items on lines of their own, each starting with '- '", line, value)
	case strings.HasPrefix(into, "int") || strings.HasPrefix(into, "uint"):
		msg = fmt.Sprintf("line %d: `%s` is not a whole number: write digits alone, without a unit or suffix (bit/s, bytes and counts are integers)", line, value)
	case strings.HasPrefix(into, "float"):
		msg = fmt.Sprintf("line %d: `%s` is not a number", line, value)
	case into == "bool":
		msg = fmt.Sprintf("line %d: `%s` is not true or false", line, value)
	default:
		msg = fmt.Sprintf("line %d: `%s` is not a value this key takes", line, value)
	}
	if path, v := keyAtLine(doc, "", line, value); path != "" {
		key := o.key(path)
		// An alias (*name) of the value is reported at the anchor's
		// line: its keys are named too.
		uses := aliasUses(doc, "", v, o)
		if rng != "" && len(uses) == 0 {
			return fmt.Sprintf("line %d: %s %s: out of range (a whole number %s)", line, key, value, rng), true
		}
		if len(uses) > 0 {
			key += ", and " + strings.Join(uses, ", ") + " by its alias *" + v.Anchor
		}
		msg += " (key " + key + ")"
	}
	return msg, true
}

// keyAtLine returns the path (as Options has it, from path at n) of the
// key of doc's mapping entry whose value is written at line with text
// value ("" for a list or a mapping), or of the list holding such a
// scalar; "" when there is none; and that value's node. The innermost
// such entry wins: a section's mapping starts at the line of its first
// key (node:'s at egress_bps: 20M's line), and a flow mapping is on its
// key's line ({egress_bps: 20M}), and the key is the value's, not the
// section's. A scalar matches a scalar only, a list or a mapping one of
// those. A merge key (<<) is not a key of the path: the keys it brings
// in are its mapping's.
func keyAtLine(n *yaml.Node, path string, line int, value string) (string, *yaml.Node) {
	if n == nil {
		return "", nil
	}
	switch n.Kind {
	case yaml.DocumentNode:
		for _, c := range n.Content {
			if p, v := keyAtLine(c, path, line, value); p != "" {
				return p, v
			}
		}
	case yaml.SequenceNode:
		for _, c := range n.Content {
			if p, v := keyAtLine(c, path+"[]", line, value); p != "" {
				return p, v
			}
		}
		for _, c := range n.Content {
			if path != "" && value != "" && c.Kind == yaml.ScalarNode && c.Line == line && c.Value == value {
				return path, c
			}
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			if p, v := keyAtLine(n.Content[i+1], entryPath(path, n.Content[i]), line, value); p != "" {
				return p, v
			}
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if v.Line != line || isMergeKey(k) {
				continue
			}
			if (v.Kind == yaml.ScalarNode && v.Value == value) || (value == "" && (v.Kind == yaml.SequenceNode || v.Kind == yaml.MappingNode)) {
				return joinKey(path, k.Value), v
			}
		}
	}
	return "", nil
}

// entryPath is the path of the value of the key k in a mapping at path:
// path itself for a merge key.
func entryPath(path string, k *yaml.Node) string {
	if isMergeKey(k) {
		return path
	}
	return joinKey(path, k.Value)
}

// aliasUses lists the keys of n (at path) whose value is an alias of v,
// "KEY at line N" (KEY named by o.Key), in the document's order; none
// when v has no anchor.
func aliasUses(n *yaml.Node, path string, v *yaml.Node, o Options) []string {
	if n == nil || v == nil || v.Anchor == "" {
		return nil
	}
	var out []string
	switch n.Kind {
	case yaml.DocumentNode:
		for _, c := range n.Content {
			out = append(out, aliasUses(c, path, v, o)...)
		}
	case yaml.SequenceNode:
		for _, c := range n.Content {
			out = append(out, aliasUses(c, path+"[]", v, o)...)
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			if a := n.Content[i+1]; a.Kind == yaml.AliasNode && a.Alias == v {
				out = append(out, fmt.Sprintf("%s at line %d", o.key(entryPath(path, n.Content[i])), a.Line))
			}
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			out = append(out, aliasUses(n.Content[i+1], entryPath(path, n.Content[i]), v, o)...)
		}
	}
	return out
}

// untruncated returns the whole text of the scalar at line in doc that
// value, as the decoder quotes it, begins: the decoder cuts a value
// longer than 10 characters to its first 7 and "..." ("1000000..." of
// "10000000kbit"), which is not the value as written and, not found
// as it is, would leave its key unnamed. ok is false when value is not
// cut or no single scalar at line begins so.
func untruncated(doc *yaml.Node, line int, value string) (string, bool) {
	prefix, cut := strings.CutSuffix(value, "...")
	if !cut || len(value) != 10 {
		return "", false
	}
	var found []string
	var walk func(n *yaml.Node)
	walk = func(n *yaml.Node) {
		if n == nil {
			return
		}
		if n.Kind == yaml.ScalarNode && n.Line == line && len(n.Value) > 10 && strings.HasPrefix(n.Value, prefix) && !slices.Contains(found, n.Value) {
			found = append(found, n.Value)
		}
		for _, c := range n.Content {
			walk(c)
		}
	}
	walk(doc)
	if len(found) != 1 {
		return "", false
	}
	return found[0], true
}

// outOfRange reports whether value, the text of a scalar with YAML tag
// tag the decoder could not put into a whole number, is a whole number
// it could not hold: a YAML int (too big, or negative for an unsigned
// one), or a whole float ("1e30", ".inf"); not a fraction nor a word.
func outOfRange(tag, value string) bool {
	switch tag {
	case "int":
		return true
	case "float":
		v, err := strconv.ParseFloat(strings.ReplaceAll(value, "_", ""), 64)
		if err != nil {
			return strings.EqualFold(strings.TrimLeft(value, "+-"), ".inf")
		}
		return v == math.Trunc(v)
	}
	return false
}

// intRange is the range of whole numbers of the Go type into ("int64",
// "uint16"): "from -9223372036854775808 to 9223372036854775807".
func intRange(into string) string {
	unsigned := strings.HasPrefix(into, "uint")
	bits, err := strconv.Atoi(strings.TrimPrefix(strings.TrimPrefix(into, "u"), "int"))
	if err != nil {
		bits = strconv.IntSize // int, uint
	}
	if unsigned {
		return fmt.Sprintf("from 0 to %d", uint64(1)<<(bits-1)<<1-1)
	}
	return fmt.Sprintf("from %d to %d", int64(-1)<<(bits-1), uint64(1)<<(bits-1)-1)
}

// resolvesTo reports whether value, unquoted, reads as a YAML scalar of
// one of tags ("!!int" for "8", "1_000", "0x1f"; "!!bool" for "true"):
// quoted, it was a text, which is what the decoder refused.
func resolvesTo(value string, tags ...string) bool {
	var n yaml.Node
	return yaml.Unmarshal([]byte(value), &n) == nil && len(n.Content) == 1 &&
		n.Content[0].Kind == yaml.ScalarNode && slices.Contains(tags, n.Content[0].ShortTag())
}

// typeAt returns the Go type (not a pointer) of the value at path in a
// configuration of type t (path as Options has it: "cluster.nodes[].count",
// "cdp"); nil when t has no such key.
func typeAt(t reflect.Type, path string) reflect.Type {
	for _, k := range strings.Split(path, ".") {
		name, _, _ := strings.Cut(k, "[]")
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct {
			return nil
		}
		var next reflect.Type
		for i := 0; i < t.NumField(); i++ {
			if tag, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ","); t.Field(i).IsExported() && tag == name {
				next = t.Field(i).Type
			}
		}
		if next == nil {
			return nil
		}
		t = next
		for range strings.Count(k, "[]") {
			for t.Kind() == reflect.Pointer {
				t = t.Elem()
			}
			if t.Kind() != reflect.Slice && t.Kind() != reflect.Array {
				return nil
			}
			t = t.Elem()
		}
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}
