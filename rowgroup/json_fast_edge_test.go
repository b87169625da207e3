package rowgroup

import (
	"testing"

	"github.com/pqsink/pqsink/schema"
)

// checkTimestampCached parses texts in order through one dateCache, as a
// column does, and fails unless each gives what it gives with a cache of
// its own: whatever the timestamp before left in the cache.
func checkTimestampCached(t *testing.T, texts ...string) {
	t.Helper()
	for _, u := range []schema.TimeUnit{schema.Millis, schema.Micros, schema.Nanos} {
		var shared dateCache
		for _, text := range texts {
			b := []byte(text + `"}`)
			v, n, ok := parseTimestampText(b, u, &shared)
			var fresh dateCache
			want, wantN, wantOK := parseTimestampText(b, u, &fresh)
			if ok != wantOK || ok && (v != want || n != wantN) {
				t.Errorf("%q (%v) after %q: %d, %d, %v; with a fresh cache %d, %d, %v", text, u, texts, v, n, ok, want, wantN, wantOK)
			}
			// And the walk's parser, with the shared cache too.
			got, err := parseTimestamp([]byte(text), u, true, &shared)
			if want, werr := parseTimestamp([]byte(text), u, true, nil); got != want || (err == nil) != (werr == nil) {
				t.Errorf("parseTimestamp(%q, %v) after %q: %d, %v; without a cache %d, %v", text, u, texts, got, err, want, werr)
			}
		}
	}
}

func TestParseTimestampTextMinuteCache(t *testing.T) {
	for _, tt := range []struct {
		name  string
		texts []string
	}{
		{"same minute", []string{"2026-11-23T10:00:00.123456Z", "2026-11-23T10:00:59.999999999Z", "2026-11-23T10:00:07Z"}},
		{"next minute, hour, day", []string{"2026-11-23T10:00:00Z", "2026-11-23T10:01:00Z", "2026-11-23T11:01:00Z", "2026-11-24T11:01:00Z"}},
		{"same minute, bad seconds", []string{"2026-11-23T10:00:00Z", "2026-11-23T10:00:60Z", "2026-11-23T10:00:5aZ", "2026-11-23T10:00-00Z"}},
		{"same minute, other endings", []string{"2026-11-23T10:00:00Z", "2026-11-23T10:00:00+01:00", "2026-11-23T10:00:00.Z", "2026-11-23T10:00:00.1234567891Z", "2026-11-23T10:00:00"}},
		{"every fraction length", []string{"2026-11-23T10:00:00.1Z", "2026-11-23T10:00:00.12Z", "2026-11-23T10:00:00.123Z", "2026-11-23T10:00:00.1234Z",
			"2026-11-23T10:00:00.12345Z", "2026-11-23T10:00:00.123456Z", "2026-11-23T10:00:00.1234567Z", "2026-11-23T10:00:00.12345678Z", "2026-11-23T10:00:00.123456789Z"}},
		{"lower-case separator after a cached minute", []string{"2026-11-23T10:00:00Z", "2026-11-23t10:00:00Z", "2026-11-23 10:00:00Z"}},
		{"invalid minute never cached", []string{"2026-02-30T10:00:00Z", "2026-02-30T10:00:00Z", "2026-11-23T10:60:00Z", "2026-11-23T10:60:00Z", "2026-11-23T24:00:00Z"}},
		{"same date, other minute", []string{"2026-11-23T10:00:00Z", "2026-11-23T10:0a:00Z", "2026-11-23T10:00:01Z"}},
		{"out of range after a cached minute", []string{"2262-04-11T23:47:16.854775807Z", "2262-04-11T23:47:16.854775808Z", "2262-04-11T23:47:17Z"}},
		{"before the epoch", []string{"1969-12-31T23:59:59.999999Z", "1969-12-31T23:59:00Z", "0001-01-01T00:00:00Z", "0001-01-01T00:00:01.5Z"}},
	} {
		t.Run(tt.name, func(t *testing.T) { checkTimestampCached(t, tt.texts...) })
	}
}

func FuzzParseTimestampTextCached(f *testing.F) {
	f.Add("2026-11-23T10:00:00Z", "2026-11-23T10:00:01.5Z")
	f.Add("2026-11-23T10:00:00Z", "2026-11-23T10:00:60Z")
	f.Add("2026-11-23T10:00:00Z", "2026-11-23t10:00:00Z")
	f.Add("2262-04-11T23:47:16Z", "2262-04-11T23:47:16.854775808Z")
	f.Fuzz(func(t *testing.T, a, b string) {
		checkTimestampCached(t, a, b, a)
	})
}
