package archive

import (
	"fmt"
	"math"
	"math/rand/v2"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestKeyTemplate places keys by the sink's path templates.
func TestKeyTemplate(t *testing.T) {
	tests := []struct {
		template, key string
		ok            bool
		topic         string
		partition     int32
		first         int64
	}{
		{"{topic}/{topic}+{partition}+{first_offset}.parquet", "events/events+3+00000000000000000042.parquet", true, "events", 3, 42},
		{"{topic}/{topic}+{partition}+{first_offset}.parquet", "events/other+3+00000000000000000042.parquet", false, "", 0, 0},
		{"{topic}/{topic}+{partition}+{first_offset}.parquet", "events/events+3+42.parquet", false, "", 0, 0},
		{"{topic}/dt={record_time:2006-01-02}/hr={record_time:15}/{topic}+{partition}+{first_offset}.parquet",
			"a.b/dt=2026-11-23/hr=10/a.b+0+00000000000000001000.parquet", true, "a.b", 0, 1000},
		{"x/{field:user.country}/{partition}-{first_offset}.parquet", "x/DE/7-00000000000000000009.parquet", true, "", 7, 9},
		// Partitions must agree, and fit an int32; offsets must fit an int64.
		{"{partition}/{partition}-{first_offset}", "3/4-00000000000000000009", false, "", 0, 0},
		{"{partition}-{first_offset}", "2147483648-00000000000000000009", false, "", 0, 0},
		{"{partition}-{first_offset}", "1-99999999999999999999", false, "", 0, 0},
		// {first_offset} twice: both must say the same.
		{"{first_offset}/{partition}-{first_offset}", "00000000000000000009/1-00000000000000000009", true, "", 1, 9},
		{"{first_offset}/{partition}-{first_offset}", "00000000000000000009/1-00000000000000000008", false, "", 0, 0},
		// A topic holds only the characters of Kafka topic names.
		{"{topic}/{partition}-{first_offset}", "a%2Fb/1-00000000000000000009", false, "", 0, 0},
		// {field} and {record_time} hold no newline.
		{"{field:a}/{partition}-{first_offset}", "x\ny/1-00000000000000000009", false, "", 0, 0},
	}
	for _, tc := range tests {
		kt, err := Parse(tc.template, false)
		if err != nil {
			t.Fatal(err)
		}
		k, ok := kt.Match(tc.key)
		if ok != tc.ok || k.Topic != tc.topic || k.Partition != tc.partition || k.FirstOffset != tc.first {
			t.Errorf("%s in %s: %q %d %d %v, want %q %d %d %v", tc.key, tc.template, k.Topic, k.Partition, k.FirstOffset, ok, tc.topic, tc.partition, tc.first, tc.ok)
		}
		if ok && strings.Contains(k.Identity, strconv.FormatInt(k.FirstOffset, 10)+".parquet") {
			t.Errorf("%s: identity %q still holds the offset", tc.key, k.Identity)
		}
		if ok && ObjectKey(k.Identity, k.FirstOffset) != tc.key {
			t.Errorf("%s: identity %q with offset %d is %s", tc.key, k.Identity, k.FirstOffset, ObjectKey(k.Identity, k.FirstOffset))
		}
	}
	if _, err := Parse("{topic}/{partition}.parquet", false); err == nil {
		t.Error("a template without {first_offset}: no error")
	}
}

// TestMatchParts reads the {record_time} and {field} texts of a key, each
// as short as lets the rest of the key match (leftmost first, as the
// regular expression replay used to read keys with).
func TestMatchParts(t *testing.T) {
	tests := []struct {
		template, key string
		times, fields []string
		identity      string
	}{
		{"dt={record_time:2006-01-02}/c={field:a}-{field:b}/{partition}-{first_offset}", "dt=2026-11-23/c=x-y-z/7-00000000000000000009",
			[]string{"2026-11-23"}, []string{"x", "y-z"}, "dt=2026-11-23/c=x-y-z/7-\x00"},
		// A layout with '/' before a bare field: the time ends at the
		// first '/' that lets the rest match, so the key reads otherwise
		// than it was written. Hive-style name= directories avoid it.
		{"{record_time:2006/01/02}/{field:a}-{field:b}/{partition}-{first_offset}", "2026/11/23/x-y-z/7-00000000000000000009",
			[]string{"2026"}, []string{"11/23/x", "y-z"}, "2026/11/23/x-y-z/7-\x00"},
	}
	for _, tc := range tests {
		tmpl, err := Parse(tc.template, false)
		if err != nil {
			t.Fatal(err)
		}
		k, ok := tmpl.Match(tc.key)
		if !ok || !slices.Equal(k.Times, tc.times) || !slices.Equal(k.Fields, tc.fields) || k.Partition != 7 || k.FirstOffset != 9 || k.Identity != tc.identity {
			t.Errorf("%s: got %+v, %v; want times %q, fields %q, identity %q", tc.key, k, ok, tc.times, tc.fields, tc.identity)
		}
	}
}

// TestTimeBucket reads the time interval of a key back from its
// {record_time} parts.
func TestTimeBucket(t *testing.T) {
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		template, key string
		loc           *time.Location
		ok            bool
		from, to      time.Time
	}{
		{"{topic}/dt={record_time:2006-01-02}/hr={record_time:15}/{topic}+{partition}+{first_offset}.parquet",
			"e/dt=2026-11-23/hr=10/e+0+00000000000000000000.parquet", time.UTC, true,
			time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC), time.Date(2026, 11, 23, 11, 0, 0, 0, time.UTC)},
		{"{record_time:2006/01/02}/{partition}-{first_offset}",
			"2026/11/23/0-00000000000000000000", berlin, true,
			time.Date(2026, 11, 23, 0, 0, 0, 0, berlin), time.Date(2026, 11, 24, 0, 0, 0, 0, berlin)},
		{"{record_time:2006-01}/{partition}-{first_offset}", "2026-02/0-00000000000000000000", time.UTC, true,
			time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)},
		{"hr={record_time:15}/{partition}-{first_offset}", "hr=10/0-00000000000000000000", time.UTC, false, time.Time{}, time.Time{}},
		{"{record_time:2006}/{record_time:15}/{partition}-{first_offset}", "2026/10/0-00000000000000000000", time.UTC, false, time.Time{}, time.Time{}},
		{"{record_time:2006-01-02T15:04:05.000}/{partition}-{first_offset}", "2026-11-23T10:00:00.000/0-00000000000000000000", time.UTC, false, time.Time{}, time.Time{}},
		{"{topic}/{topic}+{partition}+{first_offset}.parquet", "e/e+0+00000000000000000000.parquet", time.UTC, false, time.Time{}, time.Time{}},
		// Only the key's shape counts: topics that disagree do not matter.
		{"{topic}/dt={record_time:2006-01-02}/{topic}+{partition}+{first_offset}.parquet",
			"e/dt=2026-11-23/f+0+00000000000000000000.parquet", time.UTC, true,
			time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC), time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC)},
		{"dt={record_time:2006-01-02}/{partition}-{first_offset}", "dt=2026-11-23/0-42", time.UTC, false, time.Time{}, time.Time{}},
		{"dt={record_time:2006-01-02}/{partition}-{first_offset}", "dt=2026-11-23/0-00000000000000000000", nil, false, time.Time{}, time.Time{}},
	}
	for _, tc := range tests {
		kt, err := Parse(tc.template, false)
		if err != nil {
			t.Fatal(err)
		}
		from, to, ok := kt.TimeBucket(tc.key, tc.loc)
		if ok != tc.ok || ok && (!from.Equal(tc.from) || !to.Equal(tc.to)) {
			t.Errorf("%s: [%v, %v) %v, want [%v, %v) %v", tc.key, from, to, ok, tc.from, tc.to, tc.ok)
		}
	}
}

// Segments of the templates TestRoundTrip draws: each holds at most one
// placeholder of variable text, and nothing that a value can hold ends
// it, so a key has one reading (name=value directories, as Hive lays out
// partitions).
var (
	roundTripDirs = []string{
		"{topic}", "t={topic}", "p={partition}", "archive", "v1.0",
		"dt={record_time:2006-01-02}", "hr={record_time:15}", "ym={record_time:200601}",
		"at={record_time:2006-01-02T15:04:05.000Z07:00}", "{record_time:Mon Jan _2 2006}",
		"c={field:user.country}", "{field:tenant}", "k={field:k}.d", "n={field:n}",
	}
	roundTripFiles = []string{
		"{topic}+{partition}+{first_offset}.parquet", "{partition}-{first_offset}",
		"part-{partition}-{first_offset}.parquet", "{first_offset}.{partition}.{topic}.parquet",
		"{topic}_{partition}_{first_offset}", "{field:tenant}@{partition}@{first_offset}",
	}
	// roundTripOdd are field values that escaping must carry through.
	roundTripOdd = []string{
		"", "/", "=", "%", "%2F", " ", "a b", "..", ".", "a/../b", "x=y?z#w", "ü", "日本語", "tab\there",
		"line\nbreak", "\x00", "\x7f", "{topic}", "{first_offset}", `C:\dir`, "'\"`", "+-_.", HiveNull[:5], "\xff\xfe",
	}
)

// roundTripValue draws a field value: odd ones, random bytes, random
// runes, or null (absent).
func roundTripValue(r *rand.Rand) (value string, null bool) {
	switch r.IntN(5) {
	case 0:
		return "", true
	case 1:
		return roundTripOdd[r.IntN(len(roundTripOdd))], false
	case 2:
		b := make([]byte, r.IntN(12))
		for i := range b {
			b[i] = byte(r.IntN(256))
		}
		return string(b), false
	case 3:
		var s strings.Builder
		for range r.IntN(8) {
			s.WriteRune(rune(r.IntN(0x3000)))
		}
		return s.String(), false
	}
	var s strings.Builder
	for range r.IntN(4) {
		s.WriteString(roundTripOdd[r.IntN(len(roundTripOdd))])
	}
	return s.String(), false
}

// roundTripTopic draws a Kafka topic name: 1 to 249 of its characters,
// not "." or "..".
func roundTripTopic(r *rand.Rand) string {
	const chars = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-"
	for {
		n := 1 + r.IntN(12)
		if r.IntN(20) == 0 {
			n = 249
		}
		b := make([]byte, n)
		for i := range b {
			b[i] = chars[r.IntN(len(chars))]
		}
		if s := string(b); s != "." && s != ".." {
			return s
		}
	}
}

// TestRoundTrip: every key the sink renders matches back to the parts it
// was rendered from, field values included once unescaped.
func TestRoundTrip(t *testing.T) {
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	zones := []*time.Location{time.UTC, berlin, time.FixedZone("-0530", -(5*3600 + 1800))}
	r := rand.New(rand.NewPCG(18, 1))
	for i := range 5000 {
		// A template: a few distinct directories, then a file name.
		var segs []string
		for _, j := range r.Perm(len(roundTripDirs))[:r.IntN(5)] {
			segs = append(segs, roundTripDirs[j])
		}
		segs = append(segs, roundTripFiles[r.IntN(len(roundTripFiles))])
		text := strings.Join(segs, "/")
		tmpl, err := Parse(text, false)
		if err != nil {
			t.Fatalf("%s: %v", text, err)
		}

		topic := roundTripTopic(r)
		partition := r.Int32()
		first := r.Int64()
		if r.IntN(4) == 0 {
			first = r.Int64N(1000)
		}
		if r.IntN(50) == 0 {
			partition, first = 0, math.MaxInt64
		}
		loc := zones[r.IntN(len(zones))]
		at := time.UnixMilli(r.Int64N(7258118400000)).In(loc) // 1970 to 2200
		raw := make([]string, len(tmpl.Fields()))
		nulls := make([]bool, len(raw))
		vals := make([]string, len(raw))
		for j := range raw {
			raw[j], nulls[j] = roundTripValue(r)
			if nulls[j] {
				vals[j] = HiveNull
			} else {
				vals[j] = Escape(raw[j])
			}
		}
		id := string(tmpl.AppendIdentity(nil, topic, partition, at, vals))
		key := ObjectKey(id, first)

		k, ok := tmpl.Match(key)
		where := fmt.Sprintf("case %d: %s rendered as %q", i, text, key)
		if !ok {
			t.Fatalf("%s: no match", where)
		}
		wantTopic := ""
		if strings.Contains(text, "{topic}") {
			wantTopic = topic
		}
		if k.Topic != wantTopic || k.Partition != partition || k.FirstOffset != first || k.Identity != id {
			t.Fatalf("%s: got %q %d %d %q, want %q %d %d %q", where, k.Topic, k.Partition, k.FirstOffset, k.Identity, wantTopic, partition, first, id)
		}
		var layouts []string
		for _, p := range tmpl.parts {
			if p.kind == timePart {
				layouts = append(layouts, p.text)
			}
		}
		if len(k.Times) != len(layouts) {
			t.Fatalf("%s: times %q", where, k.Times)
		}
		for j, layout := range layouts {
			if want := at.Format(layout); k.Times[j] != want {
				t.Fatalf("%s: time %d is %q, want %q", where, j, k.Times[j], want)
			}
		}
		if len(k.Fields) != len(raw) {
			t.Fatalf("%s: fields %q", where, k.Fields)
		}
		for j := range raw {
			got, null, err := Unescape(k.Fields[j])
			wantNull := nulls[j] || raw[j] == "" || raw[j] == HiveNull
			if err != nil || null != wantNull || !null && got != raw[j] {
				t.Fatalf("%s: field %d reads back as %q (null %v, %v), want %q (null %v)", where, j, got, null, err, raw[j], wantNull)
			}
		}
		// A zone without daylight saving time names each bucket once.
		if loc != berlin {
			if from, to, ok := tmpl.TimeBucket(key, loc); ok && (at.Before(from) || !at.Before(to)) {
				t.Fatalf("%s: %v is not in its bucket [%v, %v)", where, at, from, to)
			}
		}
	}
}

// referenceRegexp is the regular expression replay matched keys with
// before Match, kept to check that Match reads every key as it did.
func referenceRegexp(t *Template) *regexp.Regexp {
	var b strings.Builder
	b.WriteString("^")
	for _, p := range t.parts {
		switch p.kind {
		case literal:
			b.WriteString(regexp.QuoteMeta(p.text))
		case topicPart:
			b.WriteString(`([a-zA-Z0-9._-]+)`)
		case partitionPart:
			b.WriteString(`([0-9]+)`)
		case offsetPart:
			b.WriteString(`([0-9]{20})`)
		case timePart, fieldPart:
			b.WriteString(`(.*?)`)
		}
	}
	b.WriteString("$")
	return regexp.MustCompile(b.String())
}

// fuzzTemplates are the templates FuzzMatch matches keys against.
var fuzzTemplates = []string{
	"{topic}/{topic}+{partition}+{first_offset}.parquet",
	"{topic}/dt={record_time:2006-01-02}/hr={record_time:15}/{topic}+{partition}+{first_offset}.parquet",
	"x/{field:user.country}/{partition}-{first_offset}.parquet",
	"{record_time:2006/01/02}/{field:a}{field:b}/{partition}-{first_offset}",
	"{field:a}-{field:b}-{partition}-{partition}-{first_offset}",
	"{partition}{first_offset}{topic}",
	"{first_offset}/{partition}-{first_offset}",
}

// FuzzMatch: Match reads any key as the regular expression replay used
// did (the same parts, or no match), and what it matches renders back to
// the key.
func FuzzMatch(f *testing.F) {
	for _, key := range []string{
		"events/events+3+00000000000000000042.parquet",
		"events/dt=2026-11-23/hr=10/events+0+00000000000000001000.parquet",
		"a.b/dt=2026-11-23/hr=10/a.b+0+00000000000000001000.parquet",
		"x/DE/7-00000000000000000009.parquet",
		"x/__HIVE_DEFAULT_PARTITION__/7-00000000000000000009.parquet",
		"x/a%2Fb%3Dc/7-00000000000000000009.parquet",
		"2026/11/23/x-y-z/7-00000000000000000009",
		"a-b-1-1-00000000000000000009",
		"00000000000000000009/1-00000000000000000009",
		"700000000000000000009events",
		"events/events+3+42.parquet",
		"_pqsink/state/g/t/0/00000000000000000005-0123456789abcdef.json",
	} {
		for i := range fuzzTemplates {
			f.Add(uint8(i), key)
		}
	}
	tmpls := make([]*Template, len(fuzzTemplates))
	refs := make([]*regexp.Regexp, len(fuzzTemplates))
	for i, text := range fuzzTemplates {
		tmpl, err := Parse(text, false)
		if err != nil {
			f.Fatal(err)
		}
		tmpls[i], refs[i] = tmpl, referenceRegexp(tmpl)
	}
	f.Fuzz(func(t *testing.T, which uint8, key string) {
		tmpl, ref := tmpls[int(which)%len(tmpls)], refs[int(which)%len(tmpls)]
		spans, ok := tmpl.spans(key)
		m := ref.FindStringSubmatchIndex(key)
		if ok != (m != nil) {
			t.Fatalf("%s: %q: Match's shape %v, the regexp's %v", tmpl, key, ok, m != nil)
		}
		if ok {
			g := 1
			for i, p := range tmpl.parts {
				if p.kind == literal {
					continue
				}
				if spans[2*i] != m[2*g] || spans[2*i+1] != m[2*g+1] {
					t.Fatalf("%s: %q: part %d at [%d, %d), the regexp's at [%d, %d)", tmpl, key, i, spans[2*i], spans[2*i+1], m[2*g], m[2*g+1])
				}
				g++
			}
		}
		k, ok := tmpl.Match(key)
		if !ok || strings.Contains(key, offsetMark) {
			// A key with the identity's mark in it (a NUL, which no
			// rendered key holds) has an identity that does not render it.
			return
		}
		// The parts render the key back (a partition as written: Match
		// reads leading zeros the sink never writes).
		times, fields := k.Times, k.Fields
		var b strings.Builder
		for i, p := range tmpl.parts {
			switch p.kind {
			case literal:
				b.WriteString(p.text)
			case topicPart:
				b.WriteString(k.Topic)
			case partitionPart:
				text := key[spans[2*i]:spans[2*i+1]]
				if n, err := strconv.ParseInt(text, 10, 32); err != nil || int32(n) != k.Partition {
					t.Fatalf("%s: %q: partition %q read as %d", tmpl, key, text, k.Partition)
				}
				b.WriteString(text)
			case offsetPart:
				b.WriteString(offsetMark)
			case timePart:
				b.WriteString(times[0])
				times = times[1:]
			case fieldPart:
				b.WriteString(fields[0])
				fields = fields[1:]
			}
		}
		if got := ObjectKey(b.String(), k.FirstOffset); got != key {
			t.Fatalf("%s: %q matches as %+v, which renders %q", tmpl, key, k, got)
		}
		if got := ObjectKey(k.Identity, k.FirstOffset); got != key {
			t.Fatalf("%s: %q: identity %q renders %q", tmpl, key, k.Identity, got)
		}
	})
}

// TestMatchBounded: a key that many ways of placing the parts nearly fit
// is refused in polynomial time, as the regular expression refused it, not
// after trying every way.
func TestMatchBounded(t *testing.T) {
	tmpl, err := Parse("{field:a}-{field:b}-{field:c}-{field:d}-{field:e}-{field:f}/{partition}-{first_offset}", false)
	if err != nil {
		t.Fatal(err)
	}
	key := strings.Repeat("-", 400) + "/1-2"
	done := make(chan bool, 1)
	go func() {
		_, ok := tmpl.Match(key)
		done <- ok
	}()
	select {
	case ok := <-done:
		if ok {
			t.Errorf("%q matched", key)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Match of a 400-byte key took over 10s")
	}
}
