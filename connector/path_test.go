package connector

import (
	"strings"
	"testing"
	"time"
)

func TestPathTemplate(t *testing.T) {
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	ts := time.Date(2026, 3, 29, 0, 30, 0, 0, time.UTC) // 01:30 CET, the night clocks change
	cases := []struct {
		name, tmpl string
		loc        *time.Location
		topic      string
		vals       []string
		want       string
	}{
		{"issue example", "{topic}/dt={record_time:2006-01-02}/hr={record_time:15}/{topic}+{partition}+{first_offset}.parquet", time.UTC, "events", nil,
			"events/dt=2026-03-29/hr=00/events+7+00000000000000000042.parquet"},
		{"timezone", "dt={record_time:2006-01-02T15}/{partition}-{first_offset}", berlin, "t", nil,
			"dt=2026-03-29T01/7-00000000000000000042"},
		{"fields", "country={field:user.country}/{partition}/{first_offset}.parquet", time.UTC, "t", []string{"DE"},
			"country=DE/7/00000000000000000042.parquet"},
		{"escaped topic", "{topic}/{partition}/{first_offset}", time.UTC, "a/b:c", nil,
			"a%2Fb%3Ac/7/00000000000000000042"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tmpl, err := parsePathTemplate(c.tmpl, c.loc, false)
			if err != nil {
				t.Fatal(err)
			}
			id := tmpl.identity(nil, c.topic, 7, ts, c.vals)
			if got := objectKey(string(id), 42); got != c.want {
				t.Errorf("got %s, want %s", got, c.want)
			}
		})
	}
}

func TestPathTemplateErrors(t *testing.T) {
	cases := []struct{ tmpl, want string }{
		{"{topic}/{partition}.parquet", "must contain {partition} and {first_offset}"},
		{"{partition}/{first_offset}", ""},
		{"{partition}/{first_offset}/{whatever}", "unknown placeholder {whatever}"},
		{"{partition}/{first_offset}/{record_time}", "needs a Go time layout"},
		{"{partition}/{first_offset}/{field:a..b}", "empty element"},
		{"{partition}/{first_offset}/{topic:x}", "takes no argument"},
		{"{partition}/{first_offset/x", "unterminated placeholder"},
		{"{partition}}/{first_offset}", "unmatched '}'"},
		{"/{partition}/{first_offset}", "must not start or end with '/'"},
	}
	for _, c := range cases {
		_, err := parsePathTemplate(c.tmpl, time.UTC, false)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.tmpl, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: got %v, want an error containing %q", c.tmpl, err, c.want)
		}
	}
	if _, err := parsePathTemplate("{partition}/{first_offset}", time.UTC, true); err == nil || !strings.Contains(err.Error(), "{topic}") {
		t.Errorf("several topics without {topic}: got %v", err)
	}
}

func TestAppendEscaped(t *testing.T) {
	cases := map[string]string{
		"plain-value_1.2": "plain-value_1.2",
		"":                hiveNull,
		".":               "%2E",
		"..":              "%2E%2E",
		"a/../b":          "a%2F..%2Fb",
		"x=y?z#w":         "x%3Dy%3Fz%23w",
		"tab\there":       "tab%09here",
		"üñí":             "üñí",
	}
	for in, want := range cases {
		if got := string(appendEscaped(nil, in)); got != want {
			t.Errorf("%q: got %q, want %q", in, got, want)
		}
	}
}

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
