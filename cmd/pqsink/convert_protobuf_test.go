package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pqsink/pqsink/internal/testutil/protoref"
	"github.com/pqsink/pqsink/reader"
)

// TestConvertProtobuf: pqsink convert --input-format protobuf --proto-file
// F --message M reads protoc-encoded messages, length-delimited, into a
// file of the message's Parquet schema; the flags of other inputs are
// refused with it, and its flags without it.
func TestConvertProtobuf(t *testing.T) {
	dir := t.TempDir()
	msgs, names := protoref.Messages(t)
	var wires [][]byte
	for _, n := range names {
		wires = append(wires, protoref.Encode(t, msgs[n]))
	}
	in := filepath.Join(dir, "in.bin")
	if err := os.WriteFile(in, protoref.Delimited(wires...), 0o644); err != nil {
		t.Fatal(err)
	}
	file, imports := protoref.AllTypesFile(t)
	out := filepath.Join(dir, "out.parquet")
	code, _, stderr := pqsink(t, "", "convert", "--input-format", "protobuf", "--proto-file", file, "--import-path", imports[0],
		"--message", "pqsink.test.AllTypes", "--quiet", in, out)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	f, err := reader.Open(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	if n := f.Metadata().NumRows; n != int64(len(wires)) {
		t.Fatalf("%d rows, want %d", n, len(wires))
	}
	if l := f.Schema().Lookup("u64"); l == nil || !l.HasFieldID || l.FieldID != 4 {
		t.Errorf("u64 has no field id 4: %+v", l)
	}

	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--input-format", "protobuf", "--proto-file", file}, "needs --proto-file FILE and --message NAME"},
		{[]string{"--input-format", "protobuf", "--proto-file", file, "--message", "AllTypes", "--schema", "x"}, "no --schema"},
		{[]string{"--message", "AllTypes"}, "are for --input-format protobuf"},
		{[]string{"--input-format", "protobuf", "--proto-file", file, "--message", "AllTypes"}, "pqsink/test/inner.proto"},
		{[]string{"--input-format", "protobuf", "--proto-file", file, "--import-path", imports[0], "--message", "Recursive"}, "recursive"},
	} {
		code, _, stderr := pqsink(t, "", append(append([]string{"convert"}, c.args...), in, filepath.Join(dir, "x.parquet"))...)
		if code == 0 || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, %q; want an error with %q", c.args, code, stderr, c.want)
		}
	}
}
