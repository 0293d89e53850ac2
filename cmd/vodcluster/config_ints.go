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
// (2.0, 1e9) is accepted as the decoder takes it. n is the decoded
// document's node for a value of type t; key names it in the messages.
func fractionalInts(n *yaml.Node, t reflect.Type, key string) []string {
	if n == nil {
		return nil
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
			out = append(out, fractionalInts(n.Content[i+1], t.Elem(), n.Content[i].Value)...)
		}
		return out
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if t == reflect.TypeOf(time.Duration(0)) || n.Kind != yaml.ScalarNode || n.ShortTag() != "!!float" {
			return nil
		}
		v, err := strconv.ParseFloat(strings.ReplaceAll(n.Value, "_", ""), 64)
		if err != nil || math.IsInf(v, 0) || math.IsNaN(v) || v == math.Trunc(v) {
			return nil // whole, or an error the decoder reports itself
		}
		return []string{fmt.Sprintf("line %d: %s %s: want a whole number", n.Line, key, n.Value)}
	}
	return nil
}
