package main

import (
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// fractionalInts lists, as "line N: KEY VALUE: ...", each number with a
// fraction written where the configuration wants a whole number (a count,
// bit/s, bytes, a port): the YAML decoder drops the fraction without a
// word (max_sessions_per_user: 1.5 would be 1). A float that is whole
// (2.0, 1e9) is accepted as the decoder takes it; one outside the key's
// range (9.3e18 and -.inf for an int64) is refused, the decoder would
// take some of them as -9223372036854775808. n is the decoded
// document's node for a value of type t; key names it in the messages.
// An alias (*name) is checked as the value it stands for, at the line it
// is used, and the maps a merge key (<<: *base, <<: [*a, *b]) brings in
// as the keys of the map it is in: the decoder takes both. The document
// has been decoded without error before, so an alias does not contain
// itself (the decoder refuses that).
func fractionalInts(n *yaml.Node, t reflect.Type, key string) []string {
	if n == nil {
		return nil
	}
	at := n // where the value is written: an alias's line, not its anchor's
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if n.Kind == yaml.DocumentNode {
		var out []string
		for _, c := range n.Content {
			out = append(out, fractionalInts(c, t, key)...)
		}
		return out
	}
	switch t.Kind() {
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			return nil
		}
		var out []string
		for i := 0; i+1 < len(n.Content); i += 2 {
			if isMergeKey(n.Content[i]) {
				out = append(out, mergedInts(n.Content[i+1], t, key)...)
				continue
			}
			name := n.Content[i].Value
			for j := 0; j < t.NumField(); j++ {
				f := t.Field(j)
				if tag, _, _ := strings.Cut(f.Tag.Get("yaml"), ","); f.IsExported() && tag == name {
					out = append(out, fractionalInts(n.Content[i+1], f.Type, name)...)
				}
			}
		}
		return out
	case reflect.Slice, reflect.Array:
		if n.Kind != yaml.SequenceNode {
			return nil
		}
		var out []string
		for _, c := range n.Content {
			out = append(out, fractionalInts(c, t.Elem(), key)...)
		}
		return out
	case reflect.Map:
		if n.Kind != yaml.MappingNode {
			return nil
		}
		var out []string
		for i := 0; i+1 < len(n.Content); i += 2 {
			if isMergeKey(n.Content[i]) {
				out = append(out, mergedInts(n.Content[i+1], t, key)...)
				continue
			}
			out = append(out, fractionalInts(n.Content[i+1], t.Elem(), n.Content[i].Value)...)
		}
		return out
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if t == reflect.TypeOf(time.Duration(0)) || n.Kind != yaml.ScalarNode || n.ShortTag() != "!!float" {
			return nil
		}
		v, err := strconv.ParseFloat(strings.ReplaceAll(n.Value, "_", ""), 64)
		if err != nil && strings.EqualFold(strings.TrimLeft(n.Value, "+-"), ".inf") {
			v, err = math.Inf(1), nil // YAML's .inf, which Go does not read
			if strings.HasPrefix(n.Value, "-") {
				v = math.Inf(-1)
			}
		}
		if err != nil || math.IsNaN(v) {
			return nil // an error the decoder reports itself
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
			return []string{fmt.Sprintf("line %d: %s %s: out of range (a whole number %s)", at.Line, key, n.Value, rng)}
		}
		if v == math.Trunc(v) {
			return nil // whole: the decoder takes it
		}
		return []string{fmt.Sprintf("line %d: %s %s: want a whole number", at.Line, key, n.Value)}
	}
	return nil
}

// isMergeKey reports whether k is YAML's merge key (a plain <<).
func isMergeKey(k *yaml.Node) bool {
	return k.Kind == yaml.ScalarNode && k.ShortTag() == "!!merge"
}

// mergedInts is fractionalInts of what a merge key brings into a map of
// type t: a map, or a list of maps (each may be an alias).
func mergedInts(v *yaml.Node, t reflect.Type, key string) []string {
	for v.Kind == yaml.AliasNode && v.Alias != nil {
		v = v.Alias
	}
	if v.Kind != yaml.SequenceNode {
		return fractionalInts(v, t, key)
	}
	var out []string
	for _, m := range v.Content {
		out = append(out, fractionalInts(m, t, key)...)
	}
	return out
}
