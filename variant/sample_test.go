package variant

import (
	"strings"
	"testing"
)

func TestSampler(t *testing.T) {
	obj := `{"id":1,"name":"a","tags":["x"]}`
	cases := []struct {
		name     string
		opts     SampleOptions
		values   []string
		bad      int // values refused
		wantLen  int
		wantFull bool
		inShape  string // the inferred shape mentions this
	}{
		{"count bound", SampleOptions{Count: 3}, []string{obj, obj, obj}, 0, 3, true, "id"},
		{"not full", SampleOptions{Count: 3}, []string{obj, obj}, 0, 2, false, "id"},
		{"bad values left out", SampleOptions{Count: 2}, []string{obj, `{"id":`, `not json`, obj}, 2, 2, true, "name"},
		{"bytes bound", SampleOptions{Count: 100, Bytes: 3 * int64(len(obj))}, []string{obj, obj}, 0, 2, true, "tags"},
		{"lossy numbers refused by default", SampleOptions{}, []string{`{"x":1e-400}`}, 1, 0, false, ""},
		{"lossy numbers when asked", SampleOptions{Encoding: []Option{LossyNumbers()}}, []string{`{"x":1e-400}`}, 0, 1, false, "x"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := NewSampler(c.opts)
			bad := 0
			for _, v := range c.values {
				if err := s.Add([]byte(v)); err != nil {
					bad++
				}
			}
			if bad != c.bad || s.Len() != c.wantLen || s.Full() != c.wantFull {
				t.Errorf("refused %d, len %d, full %v; want %d, %d, %v", bad, s.Len(), s.Full(), c.bad, c.wantLen, c.wantFull)
			}
			shape := s.Shape()
			if text := shape.String(); !strings.Contains(text, c.inShape) {
				t.Errorf("shape %s does not mention %q", text, c.inShape)
			}
		})
	}
}
