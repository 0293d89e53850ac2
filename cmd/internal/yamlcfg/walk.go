package yamlcfg

import (
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// fractionalInts lists, as "line N: KEY VALUE: ...", each number with a
// fraction written where the configuration wants a whole number (a count,
// bit/s, bytes, a port): the YAML decoder drops the fraction without a
// word (max_sessions_per_user: 1.5 would be 1). A float that is whole
// (2.0, 1e9) is accepted as the decoder takes it; one outside the key's
// range (9.3e18 and -.inf for an int64) is refused, the decoder would
// take some of them as -9223372036854775808. n is the decoded
// document's node for a value of type t; KEY is named by o.Key. Aliases
// and merge keys are followed as eachValue does.
func fractionalInts(n *yaml.Node, t reflect.Type, o Options) []string {
	var out []string
	eachValue(n, t, "", func(n, at *yaml.Node, t reflect.Type, path string) {
		if msg := fractionalInt(n, t, o.key(path)); msg != "" {
			out = append(out, fmt.Sprintf("line %d: %s", at.Line, msg))
		}
	})
	return out
}

// eachValue calls f with each scalar of n, the decoded document's node
// for a value of type t, that stands for a value of the configuration: n
// the scalar, at where it is written (an alias's line, not its anchor's),
// t its Go type (not a pointer) and path its keys from the top joined by
// '.' ("node.session_timeout"; a list's items have the list's path and
// "[]", "demand.kinds[].min_duration", a scalar item the list's path
// alone), path given to start with. A key the configuration does not have is
// passed over (the decoder reports it). An alias (*name) is visited as
// the value it stands for, at the line it is used, and the maps a merge
// key (<<: *base, <<: [*a, *b]) brings in as keys of the map it is in:
// the decoder takes both. The document has been decoded (or parsed)
// without a syntax error before, so an alias does not contain itself.
func eachValue(n *yaml.Node, t reflect.Type, path string, f func(n, at *yaml.Node, t reflect.Type, path string)) {
	if n == nil {
		return
	}
	at := n
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	join := func(k string) string { return joinKey(path, k) }
	switch {
	case n.Kind == yaml.DocumentNode:
		for _, c := range n.Content {
			eachValue(c, t, path, f)
		}
	case t.Kind() == reflect.Struct && n.Kind == yaml.MappingNode:
		eachKey(n, func(k, v *yaml.Node) {
			for j := 0; j < t.NumField(); j++ {
				fd := t.Field(j)
				if tag, _, _ := strings.Cut(fd.Tag.Get("yaml"), ","); fd.IsExported() && tag == k.Value {
					eachValue(v, fd.Type, join(k.Value), f)
				}
			}
		})
	case t.Kind() == reflect.Map && n.Kind == yaml.MappingNode:
		eachKey(n, func(k, v *yaml.Node) { eachValue(v, t.Elem(), join(k.Value), f) })
	case (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) && n.Kind == yaml.SequenceNode:
		for _, c := range n.Content {
			eachValue(c, t.Elem(), path+"[]", f)
		}
	case n.Kind == yaml.ScalarNode:
		f(n, at, t, strings.TrimSuffix(path, "[]"))
	}
}

// eachKey calls f with each key and value of the mapping n, those of the
// maps its merge keys bring in (a map or a list of maps, each may be an
// alias) where the merge key is.
func eachKey(n *yaml.Node, f func(k, v *yaml.Node)) {
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if !isMergeKey(k) {
			f(k, v)
			continue
		}
		for v.Kind == yaml.AliasNode && v.Alias != nil {
			v = v.Alias
		}
		maps := []*yaml.Node{v}
		if v.Kind == yaml.SequenceNode {
			maps = v.Content
		}
		for _, m := range maps {
			for m.Kind == yaml.AliasNode && m.Alias != nil {
				m = m.Alias
			}
			if m.Kind == yaml.MappingNode {
				eachKey(m, f)
			}
		}
	}
}

// fractionalInt is fractionalInts' message about the scalar n, a value
// of type t under key ("KEY VALUE: ..."), or "" when it is no number
// with a fraction (nor out of range) where t wants a whole one.
func fractionalInt(n *yaml.Node, t reflect.Type, key string) string {
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if t == durationType || n.ShortTag() != "!!float" {
			return ""
		}
		v, err := strconv.ParseFloat(strings.ReplaceAll(n.Value, "_", ""), 64)
		if err != nil && strings.EqualFold(strings.TrimLeft(n.Value, "+-"), ".inf") {
			v, err = math.Inf(1), nil // YAML's .inf, which Go does not read
			if strings.HasPrefix(n.Value, "-") {
				v = math.Inf(-1)
			}
		}
		if err != nil || math.IsNaN(v) {
			return "" // an error the decoder reports itself
		}
		// The decoder takes a float at 2^63 (9.223372036854775808e18),
		// below -2^63 or -.inf as -9223372036854775808.
		bits := t.Bits()
		lo, hi := -math.Ldexp(1, bits-1), math.Ldexp(1, bits-1)
		rng := fmt.Sprintf("from %d to %d", int64(-1)<<(bits-1), uint64(1)<<(bits-1)-1)
		if t.Kind() >= reflect.Uint {
			lo, hi = 0, math.Ldexp(1, bits)
			rng = fmt.Sprintf("from 0 to %d", uint64(1)<<(bits-1)<<1-1)
		}
		if v < lo || v >= hi {
			return fmt.Sprintf("%s %s: out of range (a whole number %s)", key, n.Value, rng)
		}
		if v == math.Trunc(v) {
			return "" // whole: the decoder takes it
		}
		return fmt.Sprintf("%s %s: want a whole number", key, n.Value)
	}
	return ""
}

// isMergeKey reports whether k is YAML's merge key (a plain <<).
func isMergeKey(k *yaml.Node) bool {
	return k.Kind == yaml.ScalarNode && k.ShortTag() == "!!merge"
}
