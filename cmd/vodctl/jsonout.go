package main

import (
	"bytes"
	"encoding/json"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	v1 "vodcluster/proto/vodcluster/v1"
)

// adminJSON is an admin answer m as vodctl --json prints it: an indented
// JSON object of its fields, every one (zero values too), keys in
// lowerCamelCase as protojson names them (sizeBytes), and 64-bit integers
// as JSON numbers, as vodctl play --json prints its own (protojson quotes
// them: "sizeBytes": "1523176", which jq compares and adds as strings).
// The nextPageToken of the catalog vodctl titles lists, which it reads
// whole, a page at a time, is left out.
func adminJSON(m proto.Message) ([]byte, error) {
	b, err := protojson.MarshalOptions{EmitUnpopulated: true}.Marshal(m)
	if err != nil {
		return nil, err
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber() // numbers keep their digits
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	int64sAsNumbers(m.ProtoReflect().Descriptor(), v)
	if _, ok := m.(*v1.ListTitlesResponse); ok {
		if o, ok := v.(map[string]any); ok {
			delete(o, "nextPageToken")
		}
	}
	return indentJSON(v)
}

// indentJSON is v as indented JSON, text as it is: json.MarshalIndent
// wrote <, > and & as \u003c, \u003e and \u0026 ("reason": "billing
// \u0026 fraud"), which only a JSON reader undoes.
func indentJSON(v any) ([]byte, error) {
	var b bytes.Buffer
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(false)
	e.SetIndent("", "  ")
	if err := e.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// int64sAsNumbers turns the quoted 64-bit integers protojson writes for
// the fields of md in v (a JSON object decoded with UseNumber) into
// numbers, in nested messages, lists and map values too.
func int64sAsNumbers(md protoreflect.MessageDescriptor, v any) {
	o, ok := v.(map[string]any)
	if !ok {
		return
	}
	fields := md.Fields()
	for i := 0; i < fields.Len(); i++ {
		fd := fields.Get(i)
		fv, ok := o[fd.JSONName()]
		if !ok {
			continue
		}
		switch {
		case fd.IsMap():
			if m, ok := fv.(map[string]any); ok {
				for k, e := range m {
					m[k] = fieldAsNumber(fd.MapValue(), e)
				}
			}
		case fd.IsList():
			if l, ok := fv.([]any); ok {
				for j, e := range l {
					l[j] = fieldAsNumber(fd, e)
				}
			}
		default:
			o[fd.JSONName()] = fieldAsNumber(fd, fv)
		}
	}
}

// fieldAsNumber is one value v of field fd: a quoted 64-bit integer as a
// number, a message with its own integers turned, anything else as is.
func fieldAsNumber(fd protoreflect.FieldDescriptor, v any) any {
	switch fd.Kind() {
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind,
		protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		if s, ok := v.(string); ok {
			n := json.Number(s)
			if _, err := n.Float64(); err == nil {
				return n
			}
		}
	case protoreflect.MessageKind, protoreflect.GroupKind:
		int64sAsNumbers(fd.Message(), v)
	}
	return v
}
