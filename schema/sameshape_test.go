package schema

import "testing"

func TestSameShape(t *testing.T) {
	base := "message m { required group g { optional int64 a; required binary s (STRING); } }"
	tests := []struct {
		name      string
		other     string
		same, eql bool
	}{
		{"identical", base, true, true},
		{"field ids differ", "message m { required group g = 7 { optional int64 a = 1; required binary s (STRING) = 2; } }", true, false},
		{"a physical type differs", "message m { required group g { optional int32 a; required binary s (STRING); } }", false, false},
		{"an annotation differs", "message m { required group g { optional int64 a; required binary s; } }", false, false},
		{"repetition differs", "message m { required group g { required int64 a; required binary s (STRING); } }", false, false},
	}
	a := MustParse(base).Fields()[0]
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := MustParse(tt.other).Fields()[0]
			if got := a.SameShape(b); got != tt.same {
				t.Errorf("SameShape = %v, want %v", got, tt.same)
			}
			if got := a.equal(b); got != tt.eql {
				t.Errorf("equal = %v, want %v", got, tt.eql)
			}
		})
	}
}
