package pathfields

import (
	"strings"
	"testing"
	"time"
)

func TestFieldLookup(t *testing.T) {
	l := NewJSON([][]string{{"user", "country"}, {"ts"}, {"n"}, {"flag"}, {"missing", "x"}})
	doc := `{"id":1,"user":{"name":"a","country":"DE","tags":[1,{"country":"no"}]},"ts":"2026-01-02T03:04:05Z","n":12.5,"flag":false,"other":{"ts":"no"}}`
	if err := l.Lookup([]byte(doc)); err != nil {
		t.Fatal(err)
	}
	want := []string{"DE", "2026-01-02T03:04:05Z", "12.5", "false", ""}
	found := []bool{true, true, true, true, false}
	for i := range want {
		if l.vals[i] != want[i] || l.found[i] != found[i] {
			t.Errorf("path %v: got %q (%v), want %q (%v)", l.paths[i], l.vals[i], l.found[i], want[i], found[i])
		}
	}
	if err := l.Lookup([]byte(`{"user":{"country":{"a":1}}}`)); err == nil || !strings.Contains(err.Error(), "not a value a path can hold") {
		t.Errorf("object at a path field: got %v", err)
	}
	if err := l.Lookup([]byte(`[1,2]`)); err == nil {
		t.Error("array record: no error")
	}
	if err := l.Lookup([]byte(`{"user":`)); err == nil {
		t.Error("truncated record: no error")
	}
}

func TestParseRecordTime(t *testing.T) {
	for in, want := range map[string]int64{
		"1700000000123":             1700000000123,
		"2026-01-02T03:04:05.5Z":    time.Date(2026, 1, 2, 3, 4, 5, 5e8, time.UTC).UnixMilli(),
		"2026-01-02T03:04:05+02:00": time.Date(2026, 1, 2, 1, 4, 5, 0, time.UTC).UnixMilli(),
	} {
		got, err := ParseRecordTime(in)
		if err != nil || got.UnixMilli() != want {
			t.Errorf("%s: got %v, %v; want %d", in, got, err, want)
		}
	}
	if _, err := ParseRecordTime("yesterday"); err == nil {
		t.Error("yesterday: no error")
	}
}
