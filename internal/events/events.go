// Package events generates the sink's reference records: clickstream-like
// JSON of about 210 bytes with nested objects and an array, the shape that
// `pqsink bench`, `pqsink demo` and the end-to-end tests use, so that
// figures measured on it compare across tools.
//
//	{"id":42,"ts":"2026-11-23T10:00:00.123456Z","user":"user_17","country":"DE",
//	 "amount":12.34,"tags":["red","sale"],
//	 "payload":{"session":"9f86d081884c7d65","nested":{"level":3,"flag":true,"score":0.25}}}
package events

import (
	"math/rand/v2"
	"strconv"
	"time"
)

// Schema is the Parquet message of the records, for format type json.
const Schema = `message event {
  required int64 id;
  required int64 ts (TIMESTAMP(MICROS,true));
  required binary user (STRING);
  required binary country (STRING);
  required double amount;
  optional group tags (LIST) {
    repeated group list {
      required binary element (STRING);
    }
  }
  optional group payload {
    required binary session (STRING);
    optional group nested {
      required int32 level;
      required boolean flag;
      required double score;
    }
  }
}
`

var (
	countries = []string{"US", "DE", "FR", "GB", "JP", "CN", "IN", "BR", "CA", "AU",
		"ES", "IT", "NL", "SE", "NO", "DK", "FI", "PL", "CZ", "AT",
		"CH", "BE", "IE", "PT", "GR", "TR", "MX", "AR", "KR", "ZA"}
	words = []string{"red", "blue", "sale", "new", "promo", "mobile", "web", "vip"}
)

// Generator makes records deterministically from a seed.
type Generator struct {
	r     *rand.Rand
	start time.Time
	next  int64
}

// New returns a generator whose records start at id 0 and at time start.
func New(seed uint64, start time.Time) *Generator {
	return &Generator{r: rand.New(rand.NewPCG(seed, 0x5eed)), start: start.UTC()}
}

// Append appends the next record's JSON (without a newline) to dst.
func (g *Generator) Append(dst []byte) []byte {
	id := g.next
	g.next++
	r := g.r
	ts := g.start.Add(time.Duration(id)*time.Millisecond + time.Duration(r.IntN(1000))*time.Microsecond)
	dst = append(dst, `{"id":`...)
	dst = strconv.AppendInt(dst, id, 10)
	dst = append(dst, `,"ts":"`...)
	dst = ts.AppendFormat(dst, "2006-01-02T15:04:05.000000Z")
	dst = append(dst, `","user":"user_`...)
	dst = strconv.AppendInt(dst, int64(r.IntN(10000)), 10)
	dst = append(dst, `","country":"`...)
	dst = append(dst, countries[r.IntN(len(countries))]...)
	dst = append(dst, `","amount":`...)
	dst = strconv.AppendFloat(dst, float64(r.IntN(1000000))/100, 'f', -1, 64)
	dst = append(dst, `,"tags":[`...)
	for i := range r.IntN(4) {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, '"')
		dst = append(dst, words[r.IntN(len(words))]...)
		dst = append(dst, '"')
	}
	dst = append(dst, `],"payload":{"session":"`...)
	const hex = "0123456789abcdef"
	s := r.Uint64()
	for range 16 {
		dst = append(dst, hex[s&15])
		s >>= 4
	}
	dst = append(dst, `","nested":{"level":`...)
	dst = strconv.AppendInt(dst, int64(r.IntN(10)), 10)
	dst = append(dst, `,"flag":`...)
	dst = strconv.AppendBool(dst, r.IntN(2) == 1)
	dst = append(dst, `,"score":`...)
	dst = strconv.AppendFloat(dst, r.Float64(), 'g', -1, 64)
	return append(dst, "}}}"...)
}
