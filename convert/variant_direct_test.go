package convert

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pqsink/pqsink/internal/events"
	"github.com/pqsink/pqsink/meta"
	"github.com/pqsink/pqsink/variant"
	"github.com/pqsink/pqsink/writer"
)

// TestVariantDirectSameFile converts the same input with the direct
// shredding and with the two-pass reference path: the files must be
// byte for byte the same, for inferred and given shapes, with records
// that fit the shape, that do not, and bad lines.
func TestVariantDirectSameFile(t *testing.T) {
	n := 20000
	if testing.Short() {
		n = 3000
	}
	var ev, mixed bytes.Buffer
	g := events.New(7, time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC))
	var line []byte
	for range n {
		line = g.Append(line[:0])
		ev.Write(line)
		ev.WriteByte('\n')
	}
	r := rand.New(rand.NewPCG(1, 2))
	for i := range n {
		line = g.Append(line[:0])
		switch r.IntN(40) { // few enough misses that the direct path is not paused
		case 0: // a field beyond the shape
			line = append(line[:len(line)-1], `,"extra":{"x":[1,2]}}`...)
		case 1: // a field of another type
			line = bytes.Replace(line, []byte(`"country":"`), []byte(`"country":7,"c":"`), 1)
		case 2: // a repeated name: a bad line
			line = append(line[:len(line)-1], `,"id":1}`...)
		case 3:
			line = append(line[:0], `[1,"a",{"b":null}]`...)
		case 4:
			line = append(line[:0], `{"id":`...) // bad JSON
		case 5:
			line = append(line[:0], strconv.Itoa(i)...)
		case 6: // numbers no Variant type holds exactly, and -0.0
			line = bytes.Replace(line, []byte(`"amount":`), []byte(`"amount":1e-400,"z":-0.0,"zz":`), 1)
		}
		mixed.Write(line)
		mixed.WriteByte('\n')
	}
	given, err := variant.ParseShapePaths("$.id int64\n$.amount decimal(18,2)\n$.tags[*] string\n$.payload.nested.level int8\n$.payload.nested.score double")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name  string
		in    []byte
		shape *variant.Shape
	}{
		{"events, inferred", ev.Bytes(), nil},
		{"events, given", ev.Bytes(), &given},
		{"mixed, inferred", mixed.Bytes(), nil},
		{"mixed, given", mixed.Bytes(), &given},
	} {
		for _, lossy := range []bool{false, true} {
			var files [2]bytes.Buffer
			var stats [2]Stats
			for i, twoPass := range []bool{false, true} {
				opts := VariantOptions{Shape: tt.shape, LossyNumbers: lossy, Sample: 500, twoPass: twoPass}
				opts.Errors = Skip
				opts.RowGroupSize = 1 << 20
				opts.Writer = []writer.Option{writer.Compression(meta.CodecZstd, 3)}
				st, err := RunVariant(context.Background(), bytes.NewReader(tt.in), &files[i], opts)
				if err != nil {
					t.Fatalf("%s: %v", tt.name, err)
				}
				st.Metadata = nil
				stats[i] = st
			}
			if !bytes.Equal(files[0].Bytes(), files[1].Bytes()) {
				t.Errorf("%s (lossy %v): the direct path wrote %d bytes, the two-pass path %d, not the same", tt.name, lossy, files[0].Len(), files[1].Len())
			}
			if fmt.Sprint(stats[0]) != fmt.Sprint(stats[1]) || stats[0].Rows == 0 || strings.Contains(tt.name, "mixed") && stats[0].Skipped == 0 {
				t.Errorf("%s: stats %+v, two-pass %+v", tt.name, stats[0], stats[1])
			}
		}
	}
}
