package main

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	"vodcluster/cmd/internal/probe"
	v1 "vodcluster/proto/vodcluster/v1"
)

// fill sets every field of m (lists with two elements, maps with one
// entry, messages three deep): 64-bit integers to values past 2^53 that
// a float64 would round, the others to something other than zero.
func fill(m protoreflect.Message, depth int) {
	fields := m.Descriptor().Fields()
	for i := 0; i < fields.Len(); i++ {
		fd := fields.Get(i)
		if fd.ContainingOneof() != nil && fd.ContainingOneof().Fields().Get(0) != fd {
			continue // one field of a oneof
		}
		switch {
		case fd.IsList():
			l := m.Mutable(fd).List()
			for j := 0; j < 2; j++ {
				if fd.Kind() == protoreflect.MessageKind {
					if depth > 0 {
						e := l.NewElement()
						fill(e.Message(), depth-1)
						l.Append(e)
					}
					continue
				}
				l.Append(scalar(fd, j))
			}
		case fd.IsMap():
			mp := m.Mutable(fd).Map()
			v := mp.NewValue()
			if fd.MapValue().Kind() == protoreflect.MessageKind {
				fill(v.Message(), depth-1)
			} else {
				v = scalar(fd.MapValue(), 1)
			}
			mp.Set(scalar(fd.MapKey(), 1).MapKey(), v)
		case fd.Kind() == protoreflect.MessageKind:
			if depth > 0 {
				fill(m.Mutable(fd).Message(), depth-1)
			}
		default:
			m.Set(fd, scalar(fd, 0))
		}
	}
}

// scalar is a value of fd's kind, j-th of a list.
func scalar(fd protoreflect.FieldDescriptor, j int) protoreflect.Value {
	switch fd.Kind() {
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return protoreflect.ValueOfInt64([]int64{9_007_199_254_740_993, math.MinInt64 + 1}[j])
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return protoreflect.ValueOfUint64(math.MaxUint64 - uint64(j))
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		return protoreflect.ValueOfInt32(int32(-7 - j))
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return protoreflect.ValueOfUint32(uint32(7 + j))
	case protoreflect.BoolKind:
		return protoreflect.ValueOfBool(true)
	case protoreflect.FloatKind:
		return protoreflect.ValueOfFloat32(0.25)
	case protoreflect.DoubleKind:
		return protoreflect.ValueOfFloat64(0.1 + float64(j))
	case protoreflect.StringKind:
		return protoreflect.ValueOfString("s" + strings.Repeat("x", j))
	case protoreflect.BytesKind:
		return protoreflect.ValueOfBytes([]byte{1, byte(j)})
	case protoreflect.EnumKind:
		vs := fd.Enum().Values()
		return protoreflect.ValueOfEnum(vs.Get(vs.Len() - 1).Number())
	}
	panic("kind " + fd.Kind().String())
}

// quotedInt64s lists the 64-bit integer fields of md that v (decoded
// with UseNumber) holds as anything but a JSON number.
func quotedInt64s(md protoreflect.MessageDescriptor, v any, path string) []string {
	if v == nil {
		return nil // a message not set: null
	}
	o, _ := v.(map[string]any)
	var bad []string
	for k := range o {
		if md.Fields().ByJSONName(k) == nil {
			bad = append(bad, path+"."+k+" (not a field's lowerCamelCase name)")
		}
	}
	fields := md.Fields()
	for i := 0; i < fields.Len(); i++ {
		fd := fields.Get(i)
		fv, ok := o[fd.JSONName()]
		if !ok {
			if fd.ContainingOneof() == nil && !(md.FullName() == "vodcluster.v1.ListTitlesResponse" && fd.JSONName() == "nextPageToken") {
				bad = append(bad, path+"."+fd.JSONName()+" (missing)")
			}
			continue
		}
		var elems []any
		ed := fd
		switch {
		case fd.IsList():
			l, _ := fv.([]any)
			elems = l
		case fd.IsMap():
			mp, _ := fv.(map[string]any)
			for _, e := range mp {
				elems = append(elems, e)
			}
			ed = fd.MapValue()
		default:
			elems = []any{fv}
		}
		for _, e := range elems {
			switch ed.Kind() {
			case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind,
				protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
				if _, ok := e.(json.Number); !ok {
					bad = append(bad, path+"."+fd.JSONName())
				}
			case protoreflect.MessageKind:
				bad = append(bad, quotedInt64s(ed.Message(), e, path+"."+fd.JSONName())...)
			}
		}
	}
	return bad
}

// vodctl --json of every message of the Admin API, filled (nested and
// repeated messages, 64-bit integers past 2^53) and empty: each 64-bit
// integer a JSON number, every key a field's lowerCamelCase name, every
// field there (zero values too), and the JSON read back by protojson is
// the message, to the last digit.
func TestAdminJSONEveryMessage(t *testing.T) {
	n := 0
	protoregistry.GlobalTypes.RangeMessages(func(mt protoreflect.MessageType) bool {
		if mt.Descriptor().ParentFile() != v1.File_vodcluster_v1_vodcluster_proto {
			return true
		}
		n++
		for _, full := range []bool{true, false} {
			m := mt.New()
			if full {
				fill(m, 3)
			}
			if tr, ok := m.Interface().(*v1.ListTitlesResponse); ok {
				tr.NextPageToken = "" // vodctl titles reads the catalog whole
			}
			out, err := adminJSON(m.Interface())
			if err != nil {
				t.Errorf("%s: %v", mt.Descriptor().FullName(), err)
				continue
			}
			d := json.NewDecoder(bytes.NewReader(out))
			d.UseNumber()
			var v any
			if err := d.Decode(&v); err != nil {
				t.Errorf("%s: %v\n%s", mt.Descriptor().FullName(), err, out)
				continue
			}
			if bad := quotedInt64s(mt.Descriptor(), v, string(mt.Descriptor().Name())); len(bad) > 0 {
				t.Errorf("%s (filled %v): %v\n%s", mt.Descriptor().FullName(), full, bad, out)
			}
			back := mt.New().Interface()
			if err := protojson.Unmarshal(out, back); err != nil || !proto.Equal(back, m.Interface()) {
				t.Errorf("%s (filled %v) read back: %v\n%v\nwant %v", mt.Descriptor().FullName(), full, err, back, m.Interface())
			}
		}
		return true
	})
	if n < 20 {
		t.Fatalf("%d messages of the Admin API", n)
	}
}

// suspensionsAdmin lists one suspension whose reason has <, > and &.
type suspensionsAdmin struct{ v1.UnimplementedAdminServer }

func (suspensionsAdmin) ListSuspensions(context.Context, *v1.ListSuspensionsRequest) (*v1.ListSuspensionsResponse, error) {
	return &v1.ListSuspensionsResponse{Suspensions: []*v1.Suspension{{User: "alice", Reason: "billing <overdue> & fraud",
		UntilUnixMs: 1_800_000_000_000}}}, nil
}

// vodctl --json and vodctl play --json write text as it is: <, > and &
// were \u003c, \u003e and \u0026 ("billing \u0026 fraud"), which only a
// JSON reader undid.
func TestJSONTextAsItIs(t *testing.T) {
	out, err := vodctlAgainst(t, suspensionsAdmin{})("--json", "suspensions")
	if err != nil || !strings.Contains(out, `"reason": "billing <overdue> & fraud"`) || !strings.Contains(out, `"untilUnixMs": 1800000000000`) {
		t.Fatalf("suspensions --json: %v\n%s", err, out)
	}
	var b strings.Builder
	printPlay(&b, probe.Result{URL: "rtsp://127.0.0.1:8554/vod/sample-001?token=a&b", Bytes: 1 << 40}, true)
	if !strings.Contains(b.String(), `"url": "rtsp://127.0.0.1:8554/vod/sample-001?token=a&b"`) || !strings.Contains(b.String(), `"bytes": 1099511627776`) ||
		strings.HasSuffix(b.String(), "\n\n") {
		t.Fatalf("play --json:\n%s", b.String())
	}
}
