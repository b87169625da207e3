package protorow

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/pqsink/pqsink/reader"
	"github.com/pqsink/pqsink/rowgroup"
	"github.com/pqsink/pqsink/schema/protobuf"
	"github.com/pqsink/pqsink/writer"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"
)

// testdata is schema/protobuf's test data: all_types.proto, its import
// path, and messages in text format.
const testdata = "../../schema/protobuf/testdata"

func allTypes(t testing.TB) protoreflect.MessageDescriptor {
	t.Helper()
	md, err := protobuf.LoadFile(context.Background(), filepath.Join(testdata, "all_types.proto"),
		[]string{filepath.Join(testdata, "imports")}, "pqsink.test.AllTypes")
	if err != nil {
		t.Fatal(err)
	}
	return md
}

// textMessages returns the messages of testdata/messages by name, as
// text format.
func textMessages(t testing.TB) map[string][]byte {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(testdata, "messages", "*.txtpb"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no test messages: %v", err)
	}
	out := map[string][]byte{}
	for _, p := range paths {
		text, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		out[filepath.Base(p)] = text
	}
	return out
}

// protocEncode encodes a text-format AllTypes with protoc --encode, the
// independent encoder (Debian's protobuf-compiler and libprotobuf-dev,
// installed by scripts/provision.sh).
func protocEncode(t testing.TB, text []byte) []byte {
	t.Helper()
	if _, err := exec.LookPath("protoc"); err != nil {
		t.Fatal("protoc is not installed: run ./scripts/provision.sh (it installs protobuf-compiler and libprotobuf-dev)")
	}
	cmd := exec.Command("protoc", "-I", testdata, "-I", filepath.Join(testdata, "imports"), "-I", "/usr/include",
		"--encode=pqsink.test.AllTypes", "all_types.proto")
	cmd.Dir = "."
	cmd.Args[len(cmd.Args)-1] = filepath.Join(testdata, "all_types.proto")
	cmd.Stdin = bytes.NewReader(text)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("protoc --encode: %v: %s", err, stderr.String())
	}
	return out
}

// fromText parses a text-format message with Go's protobuf library.
func fromText(t testing.TB, md protoreflect.MessageDescriptor, text []byte) *dynamicpb.Message {
	t.Helper()
	m := dynamicpb.NewMessage(md)
	if err := prototext.Unmarshal(text, m); err != nil {
		t.Fatal(err)
	}
	return m
}

// newBuilder returns a row group of md's Parquet schema and a builder
// over a compiled decoder.
func newBuilder(t testing.TB, md protoreflect.MessageDescriptor) (*rowgroup.RowGroup, *rowgroup.Builder) {
	t.Helper()
	s, err := protobuf.Parquet(md)
	if err != nil {
		t.Fatal(err)
	}
	g := rowgroup.New(s)
	d, err := NewDecoder(g, md)
	if err != nil {
		t.Fatal(err)
	}
	b, err := rowgroup.NewBuilder(g, d)
	if err != nil {
		t.Fatal(err)
	}
	return g, b
}

// readBack writes g to a Parquet file and reads its records back as JSON
// with the reader, with the entries of maps in key order.
func readBack(t testing.TB, g *rowgroup.RowGroup) [][]byte {
	t.Helper()
	if err := g.Check(); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	w, err := writer.New(&buf, g.Schema())
	if err != nil {
		t.Fatal(err)
	}
	if err := w.WriteRowGroup(g); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Close(); err != nil {
		t.Fatal(err)
	}
	f, err := reader.Open(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil {
		t.Fatal(err)
	}
	rows, err := f.Rows()
	if err != nil {
		t.Fatal(err)
	}
	var out [][]byte
	for {
		v, err := rows.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, sortMaps(t, v.AppendJSON(nil)))
	}
}

// sortMaps puts the entries of maps rendered as [{"key":k,"value":v}]
// in key order: an encoder writes a map's entries in any order.
func sortMaps(t testing.TB, js []byte) []byte {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(js))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		t.Fatalf("%v: %s", err, js)
	}
	var walk func(v any) any
	walk = func(v any) any {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				x[k] = walk(e)
			}
		case []any:
			for i, e := range x {
				x[i] = walk(e)
			}
			isMap := len(x) > 0
			for _, e := range x {
				o, ok := e.(map[string]any)
				_, hasKey := o["key"]
				isMap = isMap && ok && hasKey && len(o) <= 2
			}
			if isMap {
				slices.SortFunc(x, func(a, b any) int {
					ka, kb := fmt.Sprint(a.(map[string]any)["key"]), fmt.Sprint(b.(map[string]any)["key"])
					na, ea := strconv.ParseFloat(ka, 64)
					nb, eb := strconv.ParseFloat(kb, 64)
					if ea == nil && eb == nil {
						switch {
						case na < nb:
							return -1
						case na > nb:
							return 1
						}
						return 0
					}
					return bytes.Compare([]byte(ka), []byte(kb))
				})
			}
		}
		return v
	}
	out, err := json.Marshal(walk(v))
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// expectJSON renders m as the mapping of schema/protobuf says its row
// reads back: a reference that walks a message Go's protobuf library
// decoded, by reflection, independent of the compiled decoder.
func expectJSON(t testing.TB, m protoreflect.Message) []byte {
	t.Helper()
	out, err := json.Marshal(expectMessage(m))
	if err != nil {
		t.Fatal(err)
	}
	return sortMaps(t, out)
}

func expectMessage(m protoreflect.Message) map[string]any {
	out := map[string]any{}
	fs := m.Descriptor().Fields()
	for i := range fs.Len() {
		fd := fs.Get(i)
		name := string(fd.Name())
		switch {
		case fd.IsMap():
			mp := m.Get(fd).Map()
			if fd.MapKey().Kind() == protoreflect.StringKind {
				obj := map[string]any{}
				mp.Range(func(k protoreflect.MapKey, v protoreflect.Value) bool {
					obj[k.String()] = expectValue(fd.MapValue(), v)
					return true
				})
				out[name] = obj
				continue
			}
			entries := []any{}
			mp.Range(func(k protoreflect.MapKey, v protoreflect.Value) bool {
				entries = append(entries, map[string]any{"key": expectValue(fd.MapKey(), k.Value()), "value": expectValue(fd.MapValue(), v)})
				return true
			})
			out[name] = entries
		case fd.IsList():
			l := m.Get(fd).List()
			items := []any{}
			for j := range l.Len() {
				items = append(items, expectValue(fd, l.Get(j)))
			}
			out[name] = items
		case fd.HasPresence() && !m.Has(fd):
			out[name] = nil
		default:
			out[name] = expectValue(fd, m.Get(fd))
		}
	}
	return out
}

func expectValue(fd protoreflect.FieldDescriptor, v protoreflect.Value) any {
	switch fd.Kind() {
	case protoreflect.BoolKind:
		return v.Bool()
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind,
		protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return json.Number(strconv.FormatInt(v.Int(), 10))
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind, protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return json.Number(strconv.FormatUint(v.Uint(), 10))
	case protoreflect.FloatKind:
		return json.Number(strconv.FormatFloat(v.Float(), 'g', -1, 32))
	case protoreflect.DoubleKind:
		return json.Number(strconv.FormatFloat(v.Float(), 'g', -1, 64))
	case protoreflect.StringKind:
		return v.String()
	case protoreflect.BytesKind:
		return base64.StdEncoding.EncodeToString(v.Bytes())
	case protoreflect.EnumKind:
		if ev := fd.Enum().Values().ByNumber(v.Enum()); ev != nil {
			return string(ev.Name())
		}
		return strconv.Itoa(int(v.Enum()))
	}
	m := v.Message()
	md := m.Descriptor()
	get := func(n protoreflect.FieldNumber) protoreflect.Value { return m.Get(md.Fields().ByNumber(n)) }
	switch protobuf.SpecialOf(md) {
	case protobuf.Timestamp:
		return time.Unix(get(1).Int(), get(2).Int()).UTC().Format("2006-01-02T15:04:05.000000000Z")
	case protobuf.Duration:
		return json.Number(strconv.FormatInt(get(1).Int()*1e9+get(2).Int(), 10))
	case protobuf.Wrapper:
		return expectValue(md.Fields().ByNumber(1), get(1))
	case protobuf.AsVariant:
		switch md.FullName() {
		case "google.protobuf.Any":
			return map[string]any{"@type": get(1).String(), "value": base64.StdEncoding.EncodeToString(get(2).Bytes())}
		case "google.protobuf.Struct", "google.protobuf.Value", "google.protobuf.ListValue":
			js, err := protojson.Marshal(m.Interface())
			if err != nil { // a Value with no kind set: the mapping's null
				return nil
			}
			return json.RawMessage(js)
		}
		return map[string]any{}
	}
	return expectMessage(m)
}
