package convert

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/pqsink/pqsink/reader"
	"github.com/pqsink/pqsink/schema"
)

const testSchema = `message m { required int64 id; optional binary s (STRING); optional group l (LIST) { repeated group list { optional int32 element; } } }`

func input(n int) string {
	var b strings.Builder
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, `{"id":%d,"s":"value %d","l":[%d,null,%d]}`+"\n", i, i%97, i, -i)
	}
	return b.String()
}

// TestRunManyRowGroups writes many row groups (reusing one row group's
// buffers) and reads every row back in order.
func TestRunManyRowGroups(t *testing.T) {
	const n = 20000
	var out bytes.Buffer
	st, err := Run(context.Background(), strings.NewReader(input(n)), &out, Options{Schema: schema.MustParse(testSchema), RowGroupSize: 32 << 10})
	if err != nil {
		t.Fatal(err)
	}
	if st.Rows != n || st.RowGroups < 10 || st.OutBytes != int64(out.Len()) {
		t.Fatalf("stats %+v for %d bytes", st, out.Len())
	}
	f, err := reader.Open(bytes.NewReader(out.Bytes()), int64(out.Len()))
	if err != nil {
		t.Fatal(err)
	}
	if f.NumRowGroups() != st.RowGroups {
		t.Errorf("%d row groups in the file, %d counted", f.NumRowGroups(), st.RowGroups)
	}
	rows, err := f.Rows()
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; ; i++ {
		v, err := rows.Next()
		if err == io.EOF {
			if i != n {
				t.Fatalf("%d rows read, %d written", i, n)
			}
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		want := fmt.Sprintf(`{"id":%d,"s":"value %d","l":[%d,null,%d]}`, i, i%97, i, -i)
		if got := string(v.AppendJSON(nil)); got != want {
			t.Fatalf("row %d = %s, want %s", i, got, want)
		}
	}
}

type failingWriter struct{ after int }

func (w *failingWriter) Write(b []byte) (int, error) {
	if w.after -= len(b); w.after < 0 {
		return 0, errors.New("disk full")
	}
	return len(b), nil
}

// TestRunStopsOnWriteError: a failing output ends the run with its error.
func TestRunStopsOnWriteError(t *testing.T) {
	_, err := Run(context.Background(), strings.NewReader(input(20000)), &failingWriter{after: 50 << 10}, Options{Schema: schema.MustParse(testSchema), RowGroupSize: 32 << 10})
	if err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Fatalf("err = %v, want the writer's error", err)
	}
}

// TestRunCancelled: a cancelled context stops the run.
func TestRunCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Run(ctx, strings.NewReader(input(5000)), io.Discard, Options{Schema: schema.MustParse(testSchema)})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}
