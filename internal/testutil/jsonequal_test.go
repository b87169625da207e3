package testutil

import "testing"

func TestJSONEqual(t *testing.T) {
	for _, tc := range []struct {
		a, b          string
		exact, double bool
	}{
		{`{"a":1,"b":[true,null,"x"]}`, `{"b":[true,null,"x"],"a":1}`, true, true},
		{`1.5`, `15e-1`, true, true},
		{`[2]`, `[2.0]`, true, true},
		{`0.1`, `0.10000000000000001`, false, true},
		{`1e400`, `1e400`, true, false},
		{`{"a":1}`, `{"a":1,"b":2}`, false, false},
		{`[1,2]`, `[2,1]`, false, false},
		{`"1"`, `1`, false, false},
		{`null`, `{}`, false, false},
	} {
		if got, err := JSONEqual([]byte(tc.a), []byte(tc.b)); err != nil || got != tc.exact {
			t.Errorf("JSONEqual(%s, %s) = %v, %v; want %v", tc.a, tc.b, got, err, tc.exact)
		}
		if got, err := JSONEqualFunc([]byte(tc.a), []byte(tc.b), DoubleNumbers); err != nil || got != tc.double {
			t.Errorf("JSONEqualFunc(%s, %s, DoubleNumbers) = %v, %v; want %v", tc.a, tc.b, got, err, tc.double)
		}
	}
	if _, err := JSONEqual([]byte(`{"a":`), []byte(`1`)); err == nil {
		t.Error("JSONEqual of a broken text: no error")
	}
}
