package yamlcfg

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"vodcluster/cmd/internal/durflag"
)

// Show names the value v of the key at path (as Options has it), called
// name, for an error about its range: as the operator wrote it, at its
// line, when the file has it so ("line 4: days 70", "line 9:
// demand.kinds[].share -0.5"), else as it reads ("days 70"; a
// duration readably: DurTexts.Show). A key written more than once (the
// items of a list) is shown at the first place it has the value v (of
// the key's type or a wider one: an int64 for an int32 key), unless path
// names the list's item by its index, from 0 ("demand.kinds[1].share",
// "sites.aware[2]"; the first list of the path only): then at that item,
// the one whose value is out of range when another item has the same
// value. A nil File (the values came from elsewhere: defaults, flags)
// shows v as it reads.
func (f *File) Show(path, name string, v any) string {
	list, item, rest, indexed := splitItem(path)
	if indexed {
		path = strings.TrimSuffix(list+"[]"+rest, "[]")
	}
	if d, ok := v.(time.Duration); ok {
		if f == nil {
			return name + " " + durflag.Readable(d)
		}
		if indexed {
			if shown := f.showItem(list, item, path, name, v); shown != "" {
				return shown
			}
			return name + " " + durflag.Readable(d)
		}
		return f.Durations.Show(path, name, d)
	}
	if f != nil && f.Doc != nil && f.typ != nil && v != nil {
		if indexed {
			if shown := f.showItem(list, item, path, name, v); shown != "" {
				return shown
			}
		} else if shown := f.showIn(f.Doc, f.typ, "", path, name, v); shown != "" {
			return shown
		}
	}
	return fmt.Sprintf("%s %v", name, v)
}

// showIn is Show's "line N: NAME VALUE" for the first scalar under n (a
// value of type t at start's path) of the key at path with the value v,
// or "" when there is none.
func (f *File) showIn(n *yaml.Node, t reflect.Type, start, path, name string, v any) string {
	want := fmt.Sprint(v)
	d, isDur := v.(time.Duration)
	shown := ""
	eachValue(n, t, start, func(n, at *yaml.Node, t reflect.Type, p string) {
		if shown != "" || p != path {
			return
		}
		if isDur { // its text as written (days were rewritten in Doc)
			for _, dt := range f.Durations[path] {
				if dt.Line == at.Line && dt.D == d {
					shown = fmt.Sprintf("line %d: %s %s", at.Line, name, dt.Text)
				}
			}
			return
		}
		// Read as the key's own type (v may be wider: an int32 count
		// checked as an int64), compared as printed: NaN is NaN.
		got := reflect.New(t)
		if n.Decode(got.Interface()) == nil && fmt.Sprint(got.Elem().Interface()) == want {
			shown = fmt.Sprintf("line %d: %s %s", at.Line, name, n.Value)
		}
	})
	return shown
}

// showItem is showIn within the item-th item of the list at list.
func (f *File) showItem(list string, item int, path, name string, v any) string {
	if f == nil || f.Doc == nil || f.typ == nil {
		return ""
	}
	et := typeAt(f.typ, list+"[]")
	seq := findNode(f.Doc, f.typ, "", list)
	if et == nil || seq == nil || item < 0 || item >= len(seq.Content) {
		return ""
	}
	return f.showIn(seq.Content[item], et, list+"[]", path, name, v)
}

// splitItem splits a path with an item's index ("demand.kinds[1].share")
// into the list's path, the index and the rest (".share"); indexed is
// false for a path without one.
func splitItem(path string) (list string, item int, rest string, indexed bool) {
	open := strings.Index(path, "[")
	if open < 0 {
		return "", 0, "", false
	}
	end := strings.Index(path[open:], "]")
	if end < 0 {
		return "", 0, "", false
	}
	i, err := strconv.Atoi(path[open+1 : open+end])
	if err != nil {
		return "", 0, "", false
	}
	return path[:open], i, path[open+end+1:], true
}

// findNode returns the sequence node of the list at want under n (a
// value of type t at path), following aliases and merge keys as
// eachValue does (a key written over a merge key's is the decoder's
// value: the last one found), or nil.
func findNode(n *yaml.Node, t reflect.Type, path, want string) *yaml.Node {
	if n == nil || t == nil {
		return nil
	}
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if path == want {
		if n.Kind == yaml.SequenceNode {
			return n
		}
		return nil
	}
	var found *yaml.Node
	switch {
	case n.Kind == yaml.DocumentNode:
		for _, c := range n.Content {
			if s := findNode(c, t, path, want); s != nil {
				found = s
			}
		}
	case t.Kind() == reflect.Struct && n.Kind == yaml.MappingNode:
		eachKey(n, func(k, v *yaml.Node) {
			for j := 0; j < t.NumField(); j++ {
				fd := t.Field(j)
				if tag, _, _ := strings.Cut(fd.Tag.Get("yaml"), ","); fd.IsExported() && tag == k.Value {
					if p := joinKey(path, k.Value); strings.HasPrefix(want, p) {
						if s := findNode(v, fd.Type, p, want); s != nil {
							found = s
						}
					}
				}
			}
		})
	}
	return found
}
