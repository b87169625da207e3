package test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/pqsink/pqsink/convert"
)

// TestVariantConvertBadLines checks that a bad line fails the conversion
// with its line number, or is skipped and reported, both while the
// shredding shape is being inferred (the first lines) and after.
func TestVariantConvertBadLines(t *testing.T) {
	input := strings.Join([]string{
		`{"a":1}`,
		``,
		`{"a":2,}`, // line 3: trailing comma
		`{"a":3}`,
		`{"a":1,"a":2}`, // line 5: duplicate key
		`{"a":4}`,
		`[1,2`, // line 7: truncated
		`{"a":5}`,
	}, "\n")
	for _, sample := range []int{1, 100} {
		_, err := convert.RunVariant(context.Background(), strings.NewReader(input), io.Discard,
			convert.VariantOptions{Sample: sample})
		var le *convert.LineError
		if !errors.As(err, &le) || le.Line != 3 {
			t.Fatalf("sample %d: error %v, want a LineError for line 3", sample, err)
		}

		var rejects bytes.Buffer
		opts := convert.VariantOptions{Sample: sample}
		opts.Errors, opts.Rejects = convert.Skip, &rejects
		st, err := convert.RunVariant(context.Background(), strings.NewReader(input), io.Discard, opts)
		if err != nil {
			t.Fatalf("sample %d: %v", sample, err)
		}
		if st.Rows != 4 || st.Skipped != 3 || st.Lines != 8 {
			t.Errorf("sample %d: rows %d, skipped %d, lines %d; want 4, 3, 8", sample, st.Rows, st.Skipped, st.Lines)
		}
		var lines []int
		dec := json.NewDecoder(&rejects)
		for {
			var r struct {
				Line  int
				Error string
				Input string
			}
			if err := dec.Decode(&r); err == io.EOF {
				break
			} else if err != nil {
				t.Fatal(err)
			}
			if r.Error == "" || r.Input == "" {
				t.Errorf("sample %d: reject %+v lacks its reason or input", sample, r)
			}
			lines = append(lines, r.Line)
		}
		if len(lines) != 3 || lines[0] != 3 || lines[1] != 5 || lines[2] != 7 {
			t.Errorf("sample %d: rejected lines %v, want [3 5 7]", sample, lines)
		}
	}
}
