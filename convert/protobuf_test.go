package convert

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/pqsink/pqsink/internal/testutil"
	"github.com/pqsink/pqsink/internal/testutil/protoref"
	"github.com/pqsink/pqsink/meta"
	"github.com/pqsink/pqsink/reader"
	"github.com/pqsink/pqsink/schema/protobuf"
)

// TestRunProtobuf: the test messages, encoded by protoc --encode and
// framed as writeDelimitedTo frames them, convert into a file whose rows
// read back as protoc --decode's view of each message maps; a message
// that does not decode is skipped under Skip, with its bytes in the
// rejects.
func TestRunProtobuf(t *testing.T) {
	md := protoref.AllTypes(t)
	msgs, names := protoref.Messages(t)
	var wires [][]byte
	var want [][]byte
	for _, n := range names {
		w := protoref.Encode(t, msgs[n])
		wires = append(wires, w)
		want = append(want, protoref.Expect(t, protoref.FromText(t, md, protoref.Decode(t, w))))
	}
	bad := []byte{0x72, 1, 0xff} // name: not UTF-8
	in := protoref.Delimited(append(append([][]byte{}, wires[:2]...), append([][]byte{bad}, wires[2:]...)...)...)
	var out, rejects bytes.Buffer
	st, err := RunProtobuf(context.Background(), bytes.NewReader(in), &out, md, Options{Errors: Skip, Rejects: &rejects})
	if err != nil {
		t.Fatal(err)
	}
	if st.Rows != int64(len(wires)) || st.Skipped != 1 || st.Lines != int64(len(wires)+1) || st.InBytes != int64(len(in)) {
		t.Fatalf("stats %+v", st)
	}
	if !strings.Contains(rejects.String(), `"line":3`) || !strings.Contains(rejects.String(), `"input_base64":"cgH/"`) ||
		!strings.Contains(rejects.String(), "name: string is not valid UTF-8") {
		t.Errorf("rejects: %s", rejects.String())
	}
	f, err := reader.Open(bytes.NewReader(out.Bytes()), int64(out.Len()))
	if err != nil {
		t.Fatal(err)
	}
	if kv := f.Metadata().KeyValueMetadata; !hasKeyValue(kv, protobuf.MessageKey, protoref.AllTypesMessage) {
		t.Errorf("no %s=%s in the footer", protobuf.MessageKey, protoref.AllTypesMessage)
	}
	rows, err := f.Rows()
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; ; i++ {
		v, err := rows.Next()
		if errors.Is(err, io.EOF) {
			if i != len(want) {
				t.Fatalf("%d rows, want %d", i, len(want))
			}
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got := protoref.SortMaps(t, v.AppendJSON(nil))
		if ok, err := testutil.JSONEqual(got, want[i]); !ok || err != nil {
			t.Errorf("%s:\n got %s\nwant %s", names[i], got, want[i])
		}
	}
}

// TestRunProtobufFraming: a length prefix cut short or announcing more
// than the input holds ends the run with ErrFraming; a bad message fails
// it under Fail; a message over the size limit is a bad record.
func TestRunProtobufFraming(t *testing.T) {
	md := protoref.AllTypes(t)
	for _, c := range []struct {
		name string
		in   []byte
		opts Options
		want string
	}{
		{"prefix cut", []byte{0x02, 0x08, 0x01, 0x80}, Options{}, "length-delimited input is cut short"},
		{"body cut", []byte{0x05, 0x08}, Options{}, "5 bytes announced, 1 left"},
		{"bad message", []byte{0x01, 0x08}, Options{}, "line 1"},
		{"too long", []byte{0x02, 0x08, 0x01}, Options{MaxRecordBytes: 1}, "longer than the record size limit"},
	} {
		_, err := RunProtobuf(context.Background(), bytes.NewReader(c.in), io.Discard, md, c.opts)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want %q", c.name, err, c.want)
		}
	}
	st, err := RunProtobuf(context.Background(), bytes.NewReader([]byte{0, 0}), io.Discard, md, Options{})
	if err != nil || st.Rows != 2 {
		t.Errorf("two empty messages: %d rows, %v", st.Rows, err)
	}
}

func hasKeyValue(kv []meta.KeyValue, key, value string) bool {
	for _, e := range kv {
		if e.Key == key && e.Value != nil && *e.Value == value {
			return true
		}
	}
	return false
}
