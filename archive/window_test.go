package archive

import (
	"math/rand/v2"
	"testing"
	"time"
	_ "time/tzdata" // zones for the test, whatever the machine has
)

// TestWindow checks, over random times in zones with and without daylight
// saving (and Lord Howe's half-hour shift), that every time in a window
// renders the identity of the time it was computed for, that the window
// holds that time, and that it spans the layout's whole unit where no
// offset changes (a day is 24 hours in UTC).
func TestWindow(t *testing.T) {
	for _, tc := range []struct {
		template string
		ok       bool
		span     time.Duration // the window's length in UTC, when ok
	}{
		{"{topic}/{record_time:2006-01-02}/{partition}-{first_offset}.parquet", true, 24 * time.Hour},
		{"dt={record_time:2006-01-02}/hr={record_time:15}/{partition}-{first_offset}", true, time.Hour},
		{"{record_time:2006}/{record_time:01}/{partition}-{first_offset}", true, 0},
		{"{record_time:2006-01-02-15}/{partition}-{first_offset}", true, time.Hour},
		{"{record_time:Jan 2006}/{partition}-{first_offset}", true, 0},
		{"{record_time:2006-01-02T15:04}/{partition}-{first_offset}", true, time.Minute},
		{"{record_time:20060102150405}/{partition}-{first_offset}", true, time.Second},
		{"{record_time:Monday}/{partition}-{first_offset}", true, 24 * time.Hour},
		{"{record_time:2006-01-02 MST}/{partition}-{first_offset}", false, 0},
		{"{record_time:15:04:05.000}/{partition}-{first_offset}", false, 0},
		{"{topic}/{partition}-{first_offset}", false, 0},
	} {
		tmpl, err := Parse(tc.template, false)
		if err != nil {
			t.Fatalf("%s: %v", tc.template, err)
		}
		r := rand.New(rand.NewPCG(1, 2))
		for _, zone := range []string{"UTC", "Asia/Kolkata", "America/New_York", "Europe/Dublin", "Australia/Lord_Howe"} {
			loc, err := time.LoadLocation(zone)
			if err != nil {
				t.Fatal(err)
			}
			base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Unix()
			for range 3000 {
				at := time.Unix(base+r.Int64N(366*86400), r.Int64N(1e9)).In(loc)
				// Around daylight saving transitions too.
				if r.IntN(4) == 0 {
					at = time.Date(2026, time.March, 8+r.IntN(28), r.IntN(4), r.IntN(60), 0, 0, loc)
				}
				lo, hi, ok := tmpl.Window(at)
				if ok != tc.ok && (tc.ok && zone == "UTC") {
					t.Fatalf("%s at %v: ok = %v, want %v", tc.template, at, ok, tc.ok)
				}
				if !tc.ok && ok {
					t.Fatalf("%s at %v: a window, want none", tc.template, at)
				}
				if !ok {
					continue
				}
				if at.Before(lo) || !at.Before(hi) {
					t.Fatalf("%s at %v: window [%v, %v) does not hold it", tc.template, at, lo, hi)
				}
				want := string(tmpl.AppendIdentity(nil, "t", 0, at, nil))
				for _, x := range []time.Time{lo, hi.Add(-time.Nanosecond), lo.Add(time.Duration(r.Int64N(int64(hi.Sub(lo)))))} {
					if got := string(tmpl.AppendIdentity(nil, "t", 0, x.In(loc), nil)); got != want {
						t.Fatalf("%s in %s: %v renders %q, %v (in its window [%v, %v)) %q", tc.template, zone, at, want, x, lo, hi, got)
					}
				}
				if zone == "UTC" && tc.span != 0 && hi.Sub(lo) != tc.span {
					t.Fatalf("%s at %v: window of %v, want %v", tc.template, at, hi.Sub(lo), tc.span)
				}
			}
		}
	}
}

// BenchmarkIdentityInWindow is the cost a record pays for its identity
// when its time falls in the window of the previous record's, against
// rendering it.
func BenchmarkIdentityInWindow(b *testing.B) {
	tmpl, err := Parse("t/_kafka_timestamp_day={record_time:2006-01-02}/{topic}+{partition}+{first_offset}.parquet", true)
	if err != nil {
		b.Fatal(err)
	}
	at := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	b.Run("render", func(b *testing.B) {
		var buf []byte
		for i := range b.N {
			buf = tmpl.AppendIdentity(buf[:0], "events", 3, at.Add(time.Duration(i)*time.Millisecond), nil)
		}
	})
	b.Run("window", func(b *testing.B) {
		lo, hi, _ := tmpl.Window(at)
		hits := 0
		for i := range b.N {
			x := at.Add(time.Duration(i) * time.Millisecond)
			if !x.Before(lo) && x.Before(hi) {
				hits++
			}
		}
		_ = hits
	})
}
