package benchmarks

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"
)

// Click is one clickstream event: strings of low and high cardinality,
// timestamps, doubles, nullable ints.
type Click struct {
	EventID   string  `parquet:"event_id"`
	UserID    int64   `parquet:"user_id"`
	SessionID string  `parquet:"session_id,dict"`
	EventType string  `parquet:"event_type,dict"`
	PageURL   string  `parquet:"page_url,dict"`
	Referrer  *string `parquet:"referrer,optional,dict"`
	Country   string  `parquet:"country,dict"`
	Device    string  `parquet:"device,dict"`
	TS        int64   `parquet:"ts,timestamp(microsecond)"`
	Duration  *int32  `parquet:"duration_ms,optional"`
	Price     float64 `parquet:"price"`
	IsBot     bool    `parquet:"is_bot"`
}

// ClickSchema is Click in Parquet message syntax.
const ClickSchema = `message click {
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

// Clicks generates n deterministic events.
func Clicks(n int) []Click {
	r := rand.New(rand.NewPCG(1, 2))
	types := []string{"view", "click", "scroll", "purchase", "add_to_cart", "search", "login", "logout", "share", "like"}
	devices := []string{"desktop", "mobile", "tablet", "tv", "bot"}
	referrers := []string{"https://www.google.com/", "https://news.ycombinator.com/", "https://t.co/", "https://www.bing.com/"}
	countries := make([]string, 50)
	for i := range countries {
		countries[i] = fmt.Sprintf("C%c%c", 'A'+i/26, 'A'+i%26)
	}
	urls := make([]string, 1000)
	for i := range urls {
		urls[i] = fmt.Sprintf("https://shop.example.com/catalog/item/%d?ref=home", i*7919)
	}
	out := make([]Click, n)
	ts := int64(1_700_000_000_000_000)
	for i := range out {
		ts += int64(r.IntN(2000))
		c := Click{
			EventID:   fmt.Sprintf("%016x-%08x", r.Uint64(), i),
			UserID:    int64(r.IntN(100_000)),
			SessionID: fmt.Sprintf("s-%d", i/20),
			EventType: types[r.IntN(len(types))],
			PageURL:   urls[r.IntN(len(urls))],
			Country:   countries[r.IntN(len(countries))],
			Device:    devices[r.IntN(len(devices))],
			TS:        ts,
			Price:     float64(r.IntN(100_000)) / 100,
			IsBot:     r.IntN(50) == 0,
		}
		if r.IntN(3) != 0 {
			c.Referrer = &referrers[r.IntN(len(referrers))]
		}
		if r.IntN(10) != 0 {
			d := int32(r.IntN(60_000))
			c.Duration = &d
		}
		out[i] = c
	}
	return out
}

// AppendJSON appends c as one JSON line, with ts as an RFC 3339 string.
func (c *Click) AppendJSON(dst []byte) []byte {
	dst = append(dst, `{"event_id":`...)
	dst = strconv.AppendQuote(dst, c.EventID)
	dst = append(dst, `,"user_id":`...)
	dst = strconv.AppendInt(dst, c.UserID, 10)
	dst = append(dst, `,"session_id":`...)
	dst = strconv.AppendQuote(dst, c.SessionID)
	dst = append(dst, `,"event_type":`...)
	dst = strconv.AppendQuote(dst, c.EventType)
	dst = append(dst, `,"page_url":`...)
	dst = strconv.AppendQuote(dst, c.PageURL)
	dst = append(dst, `,"referrer":`...)
	if c.Referrer != nil {
		dst = strconv.AppendQuote(dst, *c.Referrer)
	} else {
		dst = append(dst, "null"...)
	}
	dst = append(dst, `,"country":`...)
	dst = strconv.AppendQuote(dst, c.Country)
	dst = append(dst, `,"device":`...)
	dst = strconv.AppendQuote(dst, c.Device)
	dst = append(dst, `,"ts":"`...)
	dst = time.UnixMicro(c.TS).UTC().AppendFormat(dst, "2006-01-02T15:04:05.000000Z")
	dst = append(dst, `","duration_ms":`...)
	if c.Duration != nil {
		dst = strconv.AppendInt(dst, int64(*c.Duration), 10)
	} else {
		dst = append(dst, "null"...)
	}
	dst = append(dst, `,"price":`...)
	dst = strconv.AppendFloat(dst, c.Price, 'f', -1, 64)
	dst = append(dst, `,"is_bot":`...)
	dst = strconv.AppendBool(dst, c.IsBot)
	return append(dst, "}\n"...)
}

// AppendNestedJSON appends c as one JSON line shaped like a landing-zone
// event: nested objects, an array, nulls; the input of the VARIANT
// benchmarks.
func (c *Click) AppendNestedJSON(dst []byte) []byte {
	dst = append(dst, `{"event_id":`...)
	dst = strconv.AppendQuote(dst, c.EventID)
	dst = append(dst, `,"type":`...)
	dst = strconv.AppendQuote(dst, c.EventType)
	dst = append(dst, `,"ts":"`...)
	dst = time.UnixMicro(c.TS).UTC().AppendFormat(dst, "2006-01-02T15:04:05.000000Z")
	dst = append(dst, `","user":{"id":`...)
	dst = strconv.AppendInt(dst, c.UserID, 10)
	dst = append(dst, `,"session":`...)
	dst = strconv.AppendQuote(dst, c.SessionID)
	dst = append(dst, `,"geo":{"country":`...)
	dst = strconv.AppendQuote(dst, c.Country)
	dst = append(dst, `,"device":`...)
	dst = strconv.AppendQuote(dst, c.Device)
	dst = append(dst, `}},"page":{"url":`...)
	dst = strconv.AppendQuote(dst, c.PageURL)
	dst = append(dst, `,"referrer":`...)
	if c.Referrer != nil {
		dst = strconv.AppendQuote(dst, *c.Referrer)
	} else {
		dst = append(dst, "null"...)
	}
	dst = append(dst, `},"metrics":{"duration_ms":`...)
	if c.Duration != nil {
		dst = strconv.AppendInt(dst, int64(*c.Duration), 10)
	} else {
		dst = append(dst, "null"...)
	}
	dst = append(dst, `,"price":`...)
	dst = strconv.AppendFloat(dst, c.Price, 'f', -1, 64)
	dst = append(dst, `},"tags":[`...)
	dst = strconv.AppendQuote(dst, c.Device)
	dst = append(dst, ',')
	dst = strconv.AppendQuote(dst, c.Country)
	dst = append(dst, `],"is_bot":`...)
	dst = strconv.AppendBool(dst, c.IsBot)
	return append(dst, "}\n"...)
}
