package writer

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/pqsink/pqsink/internal/events"
	"github.com/pqsink/pqsink/meta"
	"github.com/pqsink/pqsink/rowgroup"
	"github.com/pqsink/pqsink/schema"
)

// clickSchema is the clickstream benchmark's shape (benchmarks.ClickSchema):
// unique ids, a few low-cardinality strings, URLs, integers, a timestamp,
// an optional int32, a double and a boolean.
const clickSchema = `message click {
  required binary event_id (STRING);
  required int64 user_id;
  required binary session_id (STRING);
  required binary event_type (STRING);
  required binary page_url (STRING);
  optional binary referrer (STRING);
  required binary country (STRING);
  required binary device (STRING);
  required int64 ts (TIMESTAMP(MICROS,true));
  optional int32 duration_ms;
  required double price;
  required boolean is_bot;
}`

// fillEvents appends n records of internal/events' shape to g, with its
// levels as the JSON shredder produces them, and some records that leave
// out the optional fields (which the generator never does) so that every
// level occurs.
func fillEvents(g *rowgroup.RowGroup, n int) {
	c := g.Columns()
	r := rand.New(rand.NewPCG(7, 11))
	words := []string{"red", "blue", "sale", "new", "promo", "mobile", "web", "vip"}
	var buf []byte
	for i := range n {
		c[0].AppendInt64(0, int64(i))
		c[1].AppendInt64(0, 1_700_000_000_000_000+int64(i)*1000+int64(r.IntN(1000)))
		buf = strconv.AppendInt(append(buf[:0], "user_"...), int64(r.IntN(10000)), 10)
		c[2].AppendBytes(0, buf)
		k := r.IntN(30)
		c[3].AppendBytes(0, []byte{'A' + byte(k/6), 'A' + byte(k%6)})
		c[4].AppendDouble(0, float64(r.IntN(1000000))/100)
		switch tags := r.IntN(4); {
		case i%97 == 5:
			c[5].Null(0, 0) // no tags
		case tags == 0:
			c[5].Null(0, 1) // an empty list
		default:
			for j := range tags {
				c[5].AppendBytes(uint8(min(j, 1)), []byte(words[r.IntN(len(words))]))
			}
		}
		switch {
		case i%101 == 3:
			for _, col := range c[6:] {
				col.Null(0, 0)
			}
		default:
			s := r.Uint64()
			buf = buf[:0]
			for range 16 {
				buf = append(buf, "0123456789abcdef"[s&15])
				s >>= 4
			}
			c[6].AppendBytes(0, buf)
			if i%89 == 7 {
				for _, col := range c[7:] {
					col.Null(0, 1)
				}
			} else {
				c[7].AppendInt32(0, int32(r.IntN(10)))
				c[8].AppendBool(0, r.IntN(2) == 1)
				c[9].AppendDouble(0, r.Float64())
			}
		}
		g.EndRow()
	}
}

// fillClicks appends n rows of the clickstream shape to g, generated as
// benchmarks.Clicks does.
func fillClicks(g *rowgroup.RowGroup, n int) {
	c := g.Columns()
	r := rand.New(rand.NewPCG(1, 2))
	types := []string{"view", "click", "scroll", "purchase", "add_to_cart", "search", "login", "logout", "share", "like"}
	devices := []string{"desktop", "mobile", "tablet", "tv", "bot"}
	referrers := []string{"https://www.google.com/", "https://news.ycombinator.com/", "https://t.co/", "https://www.bing.com/"}
	ts := int64(1_700_000_000_000_000)
	for i := range n {
		ts += int64(r.IntN(2000))
		c[0].AppendBytes(0, fmt.Appendf(nil, "%016x-%08x", r.Uint64(), i))
		c[1].AppendInt64(0, int64(r.IntN(100_000)))
		c[2].AppendBytes(0, fmt.Appendf(nil, "s-%d", i/20))
		c[3].AppendBytes(0, []byte(types[r.IntN(len(types))]))
		c[4].AppendBytes(0, fmt.Appendf(nil, "https://shop.example.com/catalog/item/%d?ref=home", r.IntN(1000)*7919))
		if r.IntN(3) != 0 {
			c[5].AppendBytes(0, []byte(referrers[r.IntN(len(referrers))]))
		} else {
			c[5].Null(0, 0)
		}
		k := r.IntN(50)
		c[6].AppendBytes(0, []byte{'C', 'A' + byte(k/26), 'A' + byte(k%26)})
		c[7].AppendBytes(0, []byte(devices[r.IntN(len(devices))]))
		c[8].AppendInt64(0, ts)
		if r.IntN(10) != 0 {
			c[9].AppendInt32(0, int32(r.IntN(60_000)))
		} else {
			c[9].Null(0, 0)
		}
		c[10].AppendDouble(0, float64(r.IntN(100_000))/100)
		c[11].AppendBool(0, r.IntN(50) == 0)
		g.EndRow()
	}
}

// shapes are the two benchmark shapes of convert.
var shapes = []struct {
	name   string
	schema string
	fill   func(*rowgroup.RowGroup, int)
}{
	{"events", events.Schema, fillEvents},
	{"clickstream", clickSchema, fillClicks},
}

// writeShape writes the row groups gs to a file with opts and returns it.
func writeShape(tb testing.TB, s *schema.Schema, gs []*rowgroup.RowGroup, opts ...Option) []byte {
	tb.Helper()
	var out bytes.Buffer
	w, err := New(&out, s, append([]Option{CreatedBy("pqsink shapes test")}, opts...)...)
	if err != nil {
		tb.Fatal(err)
	}
	for _, g := range gs {
		if err := w.WriteRowGroup(g); err != nil {
			tb.Fatal(err)
		}
	}
	if _, err := w.Close(); err != nil {
		tb.Fatal(err)
	}
	return out.Bytes()
}

// TestShapesBytes pins the files written for the events and clickstream
// shapes under several configurations, byte for byte, to their SHA-256 as
// the writer made them before its encoding was sped up: the fast paths of
// level runs, page planning, dictionaries and statistics must write
// exactly what the plain loops wrote. (The adaptive configurations were
// pinned again when data page v1 gave up the v2 encodings and v2 gave up
// BYTE_STREAM_SPLIT; "fixed" kept its sums.)
func TestShapesBytes(t *testing.T) {
	configs := []struct {
		name string
		opts []Option
	}{
		{"zstd", []Option{Compression(meta.CodecZstd, 0)}},
		{"v2-snappy", []Option{DataPageVersion(2)}},
		{"small-pages", []Option{PageSize(16 << 10), PageRowLimit(3000), DictionaryPageSize(32 << 10)}},
		{"fixed", []Option{AdaptiveEncoding(false), Compression(meta.CodecUncompressed, 0), StatisticsTruncate(8)}},
	}
	want := map[string]string{
		"events/zstd":             "1a4d36589dc76848ecfc0733a5ca38f8392eac3140ac51f8bfc3b3aa82f76005",
		"events/v2-snappy":        "b9ebd935ed6b2b397e6f54164a29f2b625b3b231308eaa6fcb8d30d2187053ea",
		"events/small-pages":      "1f9a1e7c5e3625f3d4a2a05a8a15acc318f392427378918e94bf5f3e8f4a7bb2",
		"events/fixed":            "6e5e11efb2869b10737b287fd83057038fa78674e83b52b70a4a72365ebaa1f6",
		"clickstream/zstd":        "12f0fd2c96e719227ea66ccbf0d1a02eacd0a874094a64c14a81113a555a66c0",
		"clickstream/v2-snappy":   "a90da47c4ac35348552ea46ed42250dabe10e2f6cf63cc7ca7bfdb993e63124b",
		"clickstream/small-pages": "a3fa6fa7182937cbcdc639ab8a0103453863dbb20323ce19a38be4a07ccd5280",
		"clickstream/fixed":       "6eab3205521191853a09721c1fe239dcac4bac6756b0db88690a4b6d177c63d4",
	}
	for _, sh := range shapes {
		s := schema.MustParse(sh.schema)
		var gs []*rowgroup.RowGroup
		for _, n := range []int{50_000, 1, 30_000} {
			g := rowgroup.New(s)
			sh.fill(g, n)
			gs = append(gs, g)
		}
		for _, cfg := range configs {
			name := sh.name + "/" + cfg.name
			t.Run(name, func(t *testing.T) {
				sum := sha256.Sum256(writeShape(t, s, gs, cfg.opts...))
				if got := hex.EncodeToString(sum[:]); got != want[name] {
					t.Errorf("sha256 %s, want %s", got, want[name])
				}
			})
		}
	}
}

// BenchmarkShapes measures WriteRowGroup alone on row groups of the
// events and clickstream shapes, filled once, with zstd (as convert
// writes) and uncompressed (the writer's own work without the codec's).
func BenchmarkShapes(b *testing.B) {
	const rows = 200_000
	for _, sh := range shapes {
		s := schema.MustParse(sh.schema)
		g := rowgroup.New(s)
		sh.fill(g, rows)
		for _, codec := range []meta.CompressionCodec{meta.CodecZstd, meta.CodecUncompressed} {
			b.Run(sh.name+"/"+codec.String(), func(b *testing.B) {
				var out countingDiscard
				w, err := New(&out, s, Compression(codec, 0))
				if err != nil {
					b.Fatal(err)
				}
				var cpu time.Duration
				for b.Loop() {
					if cpu == 0 { // b.Loop's first call starts the clock
						cpu = processCPU()
					}
					if err := w.Reset(&out); err != nil {
						b.Fatal(err)
					}
					if err := w.WriteRowGroup(g); err != nil {
						b.Fatal(err)
					}
					if _, err := w.Close(); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(rows)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
				// CPU time varies less than wall time on a machine shared
				// with other work.
				b.ReportMetric(float64((processCPU()-cpu).Nanoseconds())/float64(b.N), "cpu-ns/op")
				// The file's size, so that a codec setting's CPU is weighed
				// against what it saves.
				b.ReportMetric(float64(out.n)/float64(b.N), "file-bytes")
			})
		}
	}
}

// processCPU is the CPU time (user and system) the process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// countingDiscard counts the bytes written to it.
type countingDiscard struct{ n int64 }

func (c *countingDiscard) Write(b []byte) (int, error) { c.n += int64(len(b)); return len(b), nil }
