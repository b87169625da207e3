package connector

import (
	"strings"
	"testing"
	"time"
)

func TestFieldLookup(t *testing.T) {
	l := newFieldLookup([][]string{{"user", "country"}, {"ts"}, {"n"}, {"flag"}, {"missing", "x"}})
	doc := `{"id":1,"user":{"name":"a","country":"DE","tags":[1,{"country":"no"}]},"ts":"2026-01-02T03:04:05Z","n":12.5,"flag":false,"other":{"ts":"no"}}`
	if err := l.lookup([]byte(doc)); err != nil {
		t.Fatal(err)
	}
	want := []string{"DE", "2026-01-02T03:04:05Z", "12.5", "false", ""}
	found := []bool{true, true, true, true, false}
	for i := range want {
		if l.vals[i] != want[i] || l.found[i] != found[i] {
			t.Errorf("path %v: got %q (%v), want %q (%v)", l.paths[i], l.vals[i], l.found[i], want[i], found[i])
		}
	}
	if err := l.lookup([]byte(`{"user":{"country":{"a":1}}}`)); err == nil || !strings.Contains(err.Error(), "not a value a path can hold") {
		t.Errorf("object at a path field: got %v", err)
	}
	if err := l.lookup([]byte(`[1,2]`)); err == nil {
		t.Error("array record: no error")
	}
	if err := l.lookup([]byte(`{"user":`)); err == nil {
		t.Error("truncated record: no error")
	}
}

func TestParseRecordTime(t *testing.T) {
	for in, want := range map[string]int64{
		"1700000000123":             1700000000123,
		"2026-01-02T03:04:05.5Z":    time.Date(2026, 1, 2, 3, 4, 5, 5e8, time.UTC).UnixMilli(),
		"2026-01-02T03:04:05+02:00": time.Date(2026, 1, 2, 1, 4, 5, 0, time.UTC).UnixMilli(),
	} {
		got, err := parseRecordTime(in)
		if err != nil || got.UnixMilli() != want {
			t.Errorf("%s: got %v, %v; want %d", in, got, err, want)
		}
	}
	if _, err := parseRecordTime("yesterday"); err == nil {
		t.Error("yesterday: no error")
	}
}

func TestNextBoundary(t *testing.T) {
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		at     time.Time
		period time.Duration
		loc    *time.Location
		want   time.Time
	}{
		{time.Date(2026, 5, 1, 10, 17, 3, 0, time.UTC), time.Hour, time.UTC, time.Date(2026, 5, 1, 11, 0, 0, 0, time.UTC)},
		{time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC), time.Hour, time.UTC, time.Date(2026, 5, 1, 11, 0, 0, 0, time.UTC)},
		{time.Date(2026, 5, 1, 10, 17, 3, 0, time.UTC), 15 * time.Minute, time.UTC, time.Date(2026, 5, 1, 10, 30, 0, 0, time.UTC)},
		{time.Date(2026, 5, 1, 23, 50, 0, 0, time.UTC), 6 * time.Hour, time.UTC, time.Date(2026, 5, 2, 0, 0, 0, 0, time.UTC)},
		// Daily in New York: the next local midnight.
		{time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC), 24 * time.Hour, ny, time.Date(2026, 5, 2, 0, 0, 0, 0, ny)},
	}
	for _, c := range cases {
		if got := nextBoundary(c.at, c.period, c.loc); !got.Equal(c.want) {
			t.Errorf("nextBoundary(%v, %v, %v) = %v, want %v", c.at, c.period, c.loc, got, c.want)
		}
	}
}
