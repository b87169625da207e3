package archive

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/pqsink/pqsink/meta"
)

// FooterRanges is the footer entry of a file that holds several Kafka
// ranges: a file merged from others (compaction), whose records come from
// several partitions, or from runs of one partition that do not follow one
// another. Its value is a JSON array of the ranges in the file's row order,
// each an object with the fields topic, partition, first_offset,
// last_offset and records:
//
//	[{"topic":"clicks","partition":0,"first_offset":0,"last_offset":99,"records":100},
//	 {"topic":"clicks","partition":1,"first_offset":7,"last_offset":50,"records":44}]
//
// Such a file has FooterRecords (the sum of the ranges' records) and none
// of FooterTopic, FooterPartition, FooterFirstOffset, FooterLastOffset, so
// that a reader that knows only those cannot take it for a file of one
// partition. A file of one range keeps the five entries of Range.Footer.
const FooterRanges = "pqsink.kafka.ranges"

// ErrSeveralRanges is wrapped by the error of ReadRange for a footer with
// FooterRanges: the file holds several Kafka ranges, which ReadRanges reads.
var ErrSeveralRanges = errors.New("the file holds several Kafka ranges")

// rangeDoc is a Range as the FooterRanges entry writes it.
type rangeDoc struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	First     int64  `json:"first_offset"`
	Last      int64  `json:"last_offset"`
	Records   int64  `json:"records"`
}

// Coalesce returns rs with each range that continues the one before it
// joined to it: same topic and partition, and its first offset right
// after the other's last. The records of a partition's consecutive files
// then make one range, as one file of the sink would have. rs is not
// modified.
func Coalesce(rs []Range) []Range {
	out := make([]Range, 0, len(rs))
	for _, r := range rs {
		if n := len(out); n > 0 {
			p := &out[n-1]
			if p.Topic == r.Topic && p.Partition == r.Partition && p.Last < r.First && r.First-p.Last == 1 {
				p.Last = r.Last
				p.Records += r.Records
				continue
			}
		}
		out = append(out, r)
	}
	return out
}

// CompareRanges orders ranges by topic, partition and first offset: the
// order in which a merged file holds them.
func CompareRanges(a, b Range) int {
	return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition), cmp.Compare(a.First, b.First))
}

// WriteRanges gives the footer entries of a file that holds the ranges rs,
// in its row order, to set: Range.Footer's five entries for one range,
// FooterRanges and FooterRecords for several (see FooterRanges). Callers
// coalesce first (Coalesce), so that a file that holds one range in
// pieces is written as one. The ranges must be valid and in the order of
// CompareRanges, without overlaps within a partition.
func WriteRanges(rs []Range, set func(key, value string)) error {
	if err := checkRanges(rs); err != nil {
		return err
	}
	if len(rs) == 1 {
		rs[0].Footer(set)
		return nil
	}
	docs := make([]rangeDoc, len(rs))
	var total int64
	for i, r := range rs {
		docs[i] = rangeDoc(r)
		total += r.Records
	}
	b, err := json.Marshal(docs)
	if err != nil {
		return fmt.Errorf("archive: %s: %w", FooterRanges, err)
	}
	set(FooterRanges, string(b))
	set(FooterRecords, strconv.FormatInt(total, 10))
	return nil
}

// ReadRanges reads the Kafka ranges of a file from its footer's key-value
// metadata: the one range of Range.Footer's entries, or the ranges of
// FooterRanges. A footer with neither wraps ErrForeign.
func ReadRanges(kvs []meta.KeyValue) ([]Range, error) {
	var doc, topic, records *string
	for _, e := range kvs {
		switch e.Key {
		case FooterRanges:
			doc = e.Value
		case FooterTopic:
			topic = e.Value
		case FooterRecords:
			records = e.Value
		}
	}
	if doc == nil {
		r, err := ReadRange(kvs)
		if err != nil {
			return nil, err
		}
		return []Range{r}, nil
	}
	if topic != nil {
		return nil, fmt.Errorf("footer has both %s and %s: one of them is wrong", FooterRanges, FooterTopic)
	}
	var docs []rangeDoc
	dec := json.NewDecoder(bytes.NewReader([]byte(*doc)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&docs); err != nil {
		return nil, fmt.Errorf("footer %s: %w", FooterRanges, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("footer %s: text after the array", FooterRanges)
	}
	rs := make([]Range, len(docs))
	var total int64
	for i, d := range docs {
		rs[i] = Range(d)
		total += d.Records
	}
	if err := checkRanges(rs); err != nil {
		return nil, fmt.Errorf("footer %s: %w", FooterRanges, err)
	}
	if records == nil {
		return nil, fmt.Errorf("footer has %s without %s", FooterRanges, FooterRecords)
	}
	n, err := strconv.ParseInt(*records, 10, 64)
	if err != nil {
		return nil, fmt.Errorf("footer %s: %w", FooterRecords, err)
	}
	if n != total {
		return nil, fmt.Errorf("footer %s is %d, the ranges of %s hold %d records", FooterRecords, n, FooterRanges, total)
	}
	return rs, nil
}

// checkRanges checks that rs is a valid list of a file's ranges: at least
// one, each with a topic, a partition and offsets that are not negative,
// between 1 and last-first+1 records, in the order of CompareRanges and
// without overlaps within a partition.
func checkRanges(rs []Range) error {
	if len(rs) == 0 {
		return errors.New("no Kafka range")
	}
	for i, r := range rs {
		switch {
		case r.Topic == "":
			return fmt.Errorf("range %d has no topic", i)
		case r.Partition < 0 || r.First < 0 || r.Last < r.First:
			return fmt.Errorf("range %d (%s/%d, offsets %d to %d) is not a range of offsets", i, r.Topic, r.Partition, r.First, r.Last)
		case r.Records < 1 || (r.Last-r.First < 1<<62 && r.Records > r.Last-r.First+1):
			return fmt.Errorf("range %d (%s/%d, offsets %d to %d) cannot hold %d records", i, r.Topic, r.Partition, r.First, r.Last, r.Records)
		}
		if i == 0 {
			continue
		}
		p := rs[i-1]
		if CompareRanges(p, r) >= 0 || (p.Topic == r.Topic && p.Partition == r.Partition && r.First <= p.Last) {
			return fmt.Errorf("range %d (%s/%d from offset %d) is not after range %d (%s/%d, offsets %d to %d)", i, r.Topic, r.Partition, r.First, i-1, p.Topic, p.Partition, p.First, p.Last)
		}
	}
	return nil
}
