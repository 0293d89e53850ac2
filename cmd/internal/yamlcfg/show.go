package yamlcfg

import (
	"fmt"
	"reflect"
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
// the key's type or a wider one: an int64 for an int32 key). A
// nil File (the values came from elsewhere: defaults, flags) shows v as
// it reads.
func (f *File) Show(path, name string, v any) string {
	if d, ok := v.(time.Duration); ok {
		if f == nil {
			return name + " " + durflag.Readable(d)
		}
		return f.Durations.Show(path, name, d)
	}
	if f != nil && f.Doc != nil && f.typ != nil && v != nil {
		want := fmt.Sprint(v)
		shown := ""
		eachValue(f.Doc, f.typ, "", func(n, at *yaml.Node, t reflect.Type, p string) {
			if shown != "" || p != path {
				return
			}
			// Read as the key's own type (v may be wider: an int32 count
			// checked as an int64), compared as printed: NaN is NaN.
			got := reflect.New(t)
			if n.Decode(got.Interface()) == nil && fmt.Sprint(got.Elem().Interface()) == want {
				shown = fmt.Sprintf("line %d: %s %s", at.Line, name, n.Value)
			}
		})
		if shown != "" {
			return shown
		}
	}
	return fmt.Sprintf("%s %v", name, v)
}
