package archive

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
			tmpl, err := Parse(c.tmpl, false)
			if err != nil {
				t.Fatal(err)
			}
			id := tmpl.AppendIdentity(nil, c.topic, 7, ts.In(c.loc), c.vals)
			if got := ObjectKey(string(id), 42); got != c.want {
				t.Errorf("got %s, want %s", got, c.want)
			}
		})
	}
}

func TestPathTemplateErrors(t *testing.T) {
	cases := []struct{ tmpl, want string }{
		{"{topic}/{partition}.parquet", "lacks {first_offset}: every key needs {partition} and {first_offset}"},
		{"{topic}/{first_offset}.parquet", "lacks {partition}"},
		{"{partition}/{first_offset}", ""},
		{"{partition}/{first_offset}/{whatever}", "unknown placeholder {whatever}"},
		{"{partition}/{first_offset}/{record_time}", "needs a Go time layout"},
		{"{partition}/{first_offset}/{record_time:}", "needs a Go time layout"},
		{"{partition}/{first_offset}/{record_time:2006\x00}", "holds a NUL byte"},
		{"{partition}/{first_offset}/{field:a..b}", "{field} needs a dotted payload field"},
		{"{partition}/{first_offset}/{field}", "{field} needs a dotted payload field"},
		{"{partition}/{first_offset}/{topic:x}", "{topic} takes no format"},
		{"{partition}/{first_offset/x", "a '{' without its '}'"},
		{"{partition}/{first_offset/{topic}", "a '{' without its '}'"},
		{"{partition}}/{first_offset}", "a '}' without its '{'"},
		{"/{partition}/{first_offset}", "must not start or end with '/'"},
		{"{partition}/{first_offset}/", "must not start or end with '/'"},
		{"{partition}//{first_offset}", "contain '//'"},
		{"../{partition}/{first_offset}", `must not contain "." or ".." segments`},
		{"{partition}/./{first_offset}", `must not contain "." or ".." segments`},
	}
	for _, c := range cases {
		_, err := Parse(c.tmpl, false)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.tmpl, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: got %v, want an error containing %q", c.tmpl, err, c.want)
		}
	}
	if _, err := Parse("{partition}/{first_offset}", true); err == nil || !strings.Contains(err.Error(), "lacks {topic}: with more than one topic") {
		t.Errorf("several topics without {topic}: got %v", err)
	}
	long := strings.Repeat("x", 100) + "/{partition}"
	if _, err := Parse(long, false); err == nil || !strings.HasPrefix(err.Error(), `"`+strings.Repeat("x", 80)+`"...`) {
		t.Errorf("long template: got %v, want it quoted and cut at 80 bytes", err)
	}
}

func TestTemplateParts(t *testing.T) {
	tmpl, err := Parse("{field:a.b}/{record_time:2006}/{field:c}/{partition}-{first_offset}", false)
	if err != nil {
		t.Fatal(err)
	}
	if got := tmpl.Fields(); len(got) != 2 || strings.Join(got[0], ".") != "a.b" || strings.Join(got[1], ".") != "c" {
		t.Errorf("fields %q", got)
	}
	if !tmpl.PerRecord() || tmpl.String() != "{field:a.b}/{record_time:2006}/{field:c}/{partition}-{first_offset}" {
		t.Errorf("PerRecord %v, String %q", tmpl.PerRecord(), tmpl.String())
	}
	fixed, err := Parse("{topic}/{partition}-{first_offset}", false)
	if err != nil {
		t.Fatal(err)
	}
	if fixed.PerRecord() {
		t.Error("a template of topic and partition only: PerRecord")
	}
}

// TestAppendIdentityAllocs: rendering a record's identity into a buffer
// of room enough allocates nothing (the sink does it for every record).
func TestAppendIdentityAllocs(t *testing.T) {
	tmpl, err := Parse("{topic}/dt={record_time:2006-01-02}/c={field:c}/{topic}+{partition}+{first_offset}.parquet", false)
	if err != nil {
		t.Fatal(err)
	}
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 0, 256)
	at := time.Date(2026, 3, 29, 0, 30, 0, 0, time.UTC)
	vals := []string{"DE"}
	if n := testing.AllocsPerRun(100, func() {
		buf = tmpl.AppendIdentity(buf[:0], "events", 3, at.In(berlin), vals)
	}); n != 0 {
		t.Errorf("%v allocations per identity", n)
	}
}

func TestAppendEscaped(t *testing.T) {
	cases := map[string]string{
		"plain-value_1.2": "plain-value_1.2",
		"":                HiveNull,
		".":               "%2E",
		"..":              "%2E%2E",
		"a/../b":          "a%2F..%2Fb",
		"x=y?z#w":         "x%3Dy%3Fz%23w",
		"tab\there":       "tab%09here",
		"üñí":             "üñí",
	}
	for in, want := range cases {
		if got := string(AppendEscaped(nil, in)); got != want {
			t.Errorf("%q: got %q, want %q", in, got, want)
		}
		if got := Escape(in); got != want {
			t.Errorf("Escape(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestUnescape(t *testing.T) {
	cases := []struct {
		in, want string
		null, ok bool
	}{
		{"plain", "plain", false, true},
		{HiveNull, "", true, true},
		{"%2E%2E", "..", false, true},
		{"a%2Fb%3dc", "a/b=c", false, true},
		{"%25", "%", false, true},
		{"üñí%09", "üñí\t", false, true},
		{"%", "", false, false},
		{"%2", "", false, false},
		{"a%zz", "", false, false},
	}
	for _, c := range cases {
		got, null, err := Unescape(c.in)
		if (err == nil) != c.ok || got != c.want || null != c.null {
			t.Errorf("Unescape(%q) = %q, %v, %v; want %q, %v, ok %v", c.in, got, null, err, c.want, c.null, c.ok)
		}
	}
}
