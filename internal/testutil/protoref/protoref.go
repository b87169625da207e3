// Package protoref is the tests' view of Protobuf messages, independent of
// pqsink's compiled decoder: protoc (Debian's protobuf-compiler, which
// scripts/provision.sh installs) to encode and decode the test messages
// of schema/protobuf/testdata, Go's protobuf library to parse them, and a
// reflection walk that says what the Parquet mapping must read back as
// JSON. Test-only.
package protoref

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/pqsink/pqsink/internal/testutil"
	"github.com/pqsink/pqsink/schema/protobuf"
)

// AllTypesMessage is the message of all_types.proto with every type of
// the mapping.
const AllTypesMessage = "pqsink.test.AllTypes"

// Testdata returns schema/protobuf/testdata.
func Testdata(t testing.TB) string {
	t.Helper()
	return filepath.Join(testutil.RepoRoot(t), "schema", "protobuf", "testdata")
}

// AllTypesFile returns the path of all_types.proto and its import paths.
func AllTypesFile(t testing.TB) (string, []string) {
	t.Helper()
	dir := Testdata(t)
	return filepath.Join(dir, "all_types.proto"), []string{filepath.Join(dir, "imports")}
}

// AllTypes returns the descriptor of pqsink.test.AllTypes.
func AllTypes(t testing.TB) protoreflect.MessageDescriptor {
	t.Helper()
	file, imports := AllTypesFile(t)
	md, err := protobuf.LoadFile(context.Background(), file, imports, AllTypesMessage)
	if err != nil {
		t.Fatal(err)
	}
	return md
}

// Messages returns the text-format messages of testdata/messages, by file
// name, and the names sorted. value_unset.txtpb holds a Value with no
// kind set, which reads as null and replays as null_value: CanonicalNames
// leaves it out.
func Messages(t testing.TB) (map[string][]byte, []string) {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(Testdata(t), "messages", "*.txtpb"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no test messages: %v", err)
	}
	out := map[string][]byte{}
	var names []string
	for _, p := range paths {
		text, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		out[filepath.Base(p)] = text
		names = append(names, filepath.Base(p))
	}
	sort.Strings(names)
	return out, names
}

// CanonicalNames are the names of Messages whose messages replay
// restores: all but value_unset.txtpb.
func CanonicalNames(names []string) []string {
	var out []string
	for _, n := range names {
		if n != "value_unset.txtpb" {
			out = append(out, n)
		}
	}
	return out
}

// protoc runs protoc on all_types.proto with mode (--encode=M or
// --decode=M) and in as its input.
func protoc(t testing.TB, mode string, in []byte) []byte {
	t.Helper()
	if _, err := exec.LookPath("protoc"); err != nil {
		t.Fatal("protoc is not installed: run ./scripts/provision.sh (it installs protobuf-compiler and libprotobuf-dev)")
	}
	dir := Testdata(t)
	cmd := exec.Command("protoc", "-I", dir, "-I", filepath.Join(dir, "imports"), "-I", "/usr/include", mode,
		filepath.Join(dir, "all_types.proto"))
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("protoc %s: %v: %s", mode, err, stderr.String())
	}
	return out
}

// Encode encodes a text-format AllTypes with protoc --encode.
func Encode(t testing.TB, text []byte) []byte {
	t.Helper()
	return protoc(t, "--encode="+AllTypesMessage, text)
}

// Decode decodes an AllTypes with protoc --decode: protoc's view of the
// message, in text format.
func Decode(t testing.TB, wire []byte) []byte {
	t.Helper()
	return protoc(t, "--decode="+AllTypesMessage, wire)
}

// Delimited frames messages as writeDelimitedTo does: each after its
// length as a varint.
func Delimited(msgs ...[]byte) []byte {
	var out []byte
	for _, m := range msgs {
		out = protowire.AppendBytes(out, m)
	}
	return out
}

// FromText parses a text-format message with Go's protobuf library.
func FromText(t testing.TB, md protoreflect.MessageDescriptor, text []byte) *dynamicpb.Message {
	t.Helper()
	m := dynamicpb.NewMessage(md)
	if err := prototext.Unmarshal(text, m); err != nil {
		t.Fatal(err)
	}
	return m
}

// SortMaps puts the entries of maps rendered as [{"key":k,"value":v}] in
// key order (an encoder writes a map's entries in any order), and returns
// the JSON again.
func SortMaps(t testing.TB, js []byte) []byte {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(js))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		t.Fatalf("%v: %s", err, js)
	}
	out, err := json.Marshal(sortValue(v))
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func sortValue(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = sortValue(e)
		}
	case []any:
		for i, e := range x {
			x[i] = sortValue(e)
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

// Expect renders m as the mapping of schema/protobuf says its row reads
// back as JSON through reader.Value.AppendJSON (maps in key order): a
// reference that walks a message, decoded by Go's protobuf library, by
// reflection.
func Expect(t testing.TB, m protoreflect.Message) []byte {
	t.Helper()
	out, err := json.Marshal(ExpectMessage(m))
	if err != nil {
		t.Fatal(err)
	}
	return SortMaps(t, out)
}

// ExpectMessage is Expect's value of m, before it is JSON.
func ExpectMessage(m protoreflect.Message) map[string]any {
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
	return ExpectMessage(m)
}
