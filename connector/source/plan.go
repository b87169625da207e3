package source

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/pqsink/pqsink/reader"
)

// Footer key-value entries of a pqsink file (see connector/file.go).
const (
	kvTopic       = "pqsink.kafka.topic"
	kvPartition   = "pqsink.kafka.partition"
	kvFirstOffset = "pqsink.kafka.first_offset"
	kvLastOffset  = "pqsink.kafka.last_offset"
	kvRecords     = "pqsink.kafka.records"
)

// internalPrefix holds pqsink's own objects (state, checkpoints), never
// replayed.
const internalPrefix = "_pqsink/"

// keyTemplate matches object keys against the sink's path template.
type keyTemplate struct {
	re        *regexp.Regexp
	topics    []int // submatch indexes of {topic}
	partition []int // of {partition}
	offset    int   // of {first_offset}

	// {record_time:LAYOUT} parts: their submatch indexes, and their
	// layouts joined by timeSep, for reading a key's time bucket back.
	times      []int
	timeLayout string
}

// timeSep joins the record_time parts of a key for parsing them at once;
// no layout or rendered time holds it.
const timeSep = "\x01"

// parseKeyTemplate compiles a path template into a matcher of keys.
// {record_time:...} and {field:...} match any text.
func parseKeyTemplate(text string) (*keyTemplate, error) {
	t := &keyTemplate{offset: -1}
	var b strings.Builder
	b.WriteString("^")
	group := 0
	rest := text
	for rest != "" {
		i := strings.IndexByte(rest, '{')
		if i < 0 {
			b.WriteString(regexp.QuoteMeta(rest))
			break
		}
		b.WriteString(regexp.QuoteMeta(rest[:i]))
		j := strings.IndexByte(rest[i:], '}')
		if j < 0 {
			return nil, fmt.Errorf("path %q: unterminated placeholder", text)
		}
		name, arg, _ := strings.Cut(rest[i+1:i+j], ":")
		rest = rest[i+j+1:]
		group++
		switch name {
		case "topic":
			b.WriteString(`([a-zA-Z0-9._-]+)`)
			t.topics = append(t.topics, group)
		case "partition":
			b.WriteString(`([0-9]+)`)
			t.partition = append(t.partition, group)
		case "first_offset":
			b.WriteString(`([0-9]{20})`)
			if t.offset >= 0 {
				return nil, fmt.Errorf("path %q: {first_offset} twice", text)
			}
			t.offset = group
		case "record_time":
			b.WriteString(`(.*?)`)
			t.times = append(t.times, group)
			if t.timeLayout != "" {
				t.timeLayout += timeSep
			}
			t.timeLayout += arg
		case "field":
			b.WriteString(`(.*?)`)
		default:
			return nil, fmt.Errorf("path %q: unknown placeholder {%s}", text, name)
		}
	}
	b.WriteString("$")
	if t.offset < 0 || len(t.partition) == 0 {
		return nil, fmt.Errorf("path %q: has no {partition} or {first_offset}", text)
	}
	re, err := regexp.Compile(b.String())
	if err != nil {
		return nil, fmt.Errorf("path %q: %w", text, err)
	}
	t.re = re
	return t, nil
}

// match places a key: its topic ("" when the template has none), partition,
// first offset and chain identity (the key with the offset blanked out).
func (t *keyTemplate) match(key string) (topic string, partition int32, first int64, chain string, ok bool) {
	m := t.re.FindStringSubmatchIndex(key)
	if m == nil {
		return "", 0, 0, "", false
	}
	sub := func(g int) string { return key[m[2*g]:m[2*g+1]] }
	for i, g := range t.topics {
		if i == 0 {
			topic = sub(g)
		} else if sub(g) != topic {
			return "", 0, 0, "", false
		}
	}
	var p int64 = -1
	for _, g := range t.partition {
		v, err := strconv.ParseInt(sub(g), 10, 32)
		if err != nil || (p >= 0 && v != p) {
			return "", 0, 0, "", false
		}
		p = v
	}
	first, err := strconv.ParseInt(sub(t.offset), 10, 64)
	if err != nil {
		return "", 0, 0, "", false
	}
	chain = key[:m[2*t.offset]] + "\x00" + key[m[2*t.offset+1]:]
	return topic, int32(p), first, chain, true
}

// timeBucket returns the interval [from, to) of record times that key's
// {record_time} parts stand for, in zone loc; ok is false when the parts do
// not name an interval (no year, sub-second layouts, a key that does not
// match).
func (t *keyTemplate) timeBucket(key string, loc *time.Location) (from, to time.Time, ok bool) {
	if len(t.times) == 0 || loc == nil {
		return from, to, false
	}
	m := t.re.FindStringSubmatchIndex(key)
	if m == nil {
		return from, to, false
	}
	var value strings.Builder
	for i, g := range t.times {
		if i > 0 {
			value.WriteString(timeSep)
		}
		value.WriteString(key[m[2*g]:m[2*g+1]])
	}
	from, err := time.ParseInLocation(t.timeLayout, value.String(), loc)
	if err != nil || from.Year() == 0 {
		return from, to, false
	}
	// The bucket is as long as the finest unit the layout shows, and every
	// coarser unit must show too (hr=15 under dt=2006-01-02, not alone).
	ref := time.Date(2001, 2, 3, 4, 5, 6, 0, loc)
	shows := func(later time.Time) bool { return ref.Format(t.timeLayout) != later.Format(t.timeLayout) }
	if shows(ref.Add(time.Millisecond)) {
		return from, to, false
	}
	units := []func(time.Time) time.Time{
		func(x time.Time) time.Time { return x.Add(time.Second) },
		func(x time.Time) time.Time { return x.Add(time.Minute) },
		func(x time.Time) time.Time { return x.Add(time.Hour) },
		func(x time.Time) time.Time { return x.AddDate(0, 0, 1) },
		func(x time.Time) time.Time { return x.AddDate(0, 1, 0) },
		func(x time.Time) time.Time { return x.AddDate(1, 0, 0) },
	}
	finest := -1
	for i, next := range units {
		switch {
		case shows(next(ref)) && finest < 0:
			finest = i
		case !shows(next(ref)) && finest >= 0:
			return from, to, false
		}
	}
	if finest < 0 {
		return from, to, false
	}
	return from, units[finest](from), true
}

// fileRef is one object planned for replay.
type fileRef struct {
	key       string
	size      int64
	topic     string
	partition int32
	first     int64
	chain     string
	// From the footer, when it was read while planning.
	footer bool
	last   int64
}

// partitionPlan is the files of one source partition, by first offset.
type partitionPlan struct {
	topic     string
	partition int32
	files     []*fileRef
	bytes     int64
}

// name is the partition's checkpoint key, "topic/partition".
func (p *partitionPlan) name() string {
	return p.topic + "/" + strconv.Itoa(int(p.partition))
}

// plan lists the store and groups the objects that may hold matching
// records by source partition. done gives, per partition, the last offset
// a checkpoint says was produced (records up to it are skipped).
func (r *Replayer) plan(ctx context.Context, done map[string]int64) ([]*partitionPlan, error) {
	o := &r.opts
	parts := map[string]*partitionPlan{}
	add := func(f *fileRef) {
		k := f.topic + "/" + strconv.Itoa(int(f.partition))
		p := parts[k]
		if p == nil {
			p = &partitionPlan{topic: f.topic, partition: f.partition}
			parts[k] = p
		}
		p.files = append(p.files, f)
	}
	for info, err := range r.store.List(ctx, "") {
		if err != nil {
			return nil, fmt.Errorf("listing %s: %w", o.From, err)
		}
		if strings.HasPrefix(info.Key, internalPrefix) || !strings.HasSuffix(info.Key, o.Suffix) {
			continue
		}
		r.stats.FilesListed.Add(1)
		f := &fileRef{key: info.Key, size: info.Size}
		topic, partition, first, chain, ok := r.keys.match(info.Key)
		if ok && topic == "" {
			// A template without {topic} does not say the file's topic:
			// the footer does.
			ok = false
		}
		if ok {
			f.topic, f.partition, f.first, f.chain = topic, partition, first, chain
		} else {
			if err := r.readFooter(ctx, f); err != nil {
				return nil, err
			}
			r.stats.FootersRead.Add(1)
		}
		if from, to, ok := r.keys.timeBucket(info.Key, o.PathTimezone); ok && !o.timeMayMatch(from.UnixMilli(), to.UnixMilli()-1) {
			r.stats.FilesSkipped.Add(1)
			continue
		}
		if !o.keepTopic(f.topic) || !o.keepPartition(f.partition) || f.first >= o.EndOffset ||
			(f.footer && (f.last < o.FromOffset || f.last <= doneOf(done, f))) {
			r.stats.FilesSkipped.Add(1)
			continue
		}
		add(f)
	}
	out := make([]*partitionPlan, 0, len(parts))
	for _, p := range parts {
		sort.Slice(p.files, func(i, j int) bool {
			a, b := p.files[i], p.files[j]
			if a.first != b.first {
				return a.first < b.first
			}
			return a.key < b.key
		})
		// A file is followed in its chain by one that starts at or before
		// the first offset wanted: it ends before, so it holds nothing.
		from := max(o.FromOffset, doneOf(done, p.files[0])+1)
		nextInChain := map[string]int64{}
		keep := make([]*fileRef, 0, len(p.files))
		for i := len(p.files) - 1; i >= 0; i-- {
			f := p.files[i]
			if f.chain != "" {
				if next, ok := nextInChain[f.chain]; ok && next <= from {
					r.stats.FilesSkipped.Add(1)
					continue
				}
				nextInChain[f.chain] = f.first
			}
			keep = append(keep, f)
		}
		// keep was filled backwards.
		for i, j := 0, len(keep)-1; i < j; i, j = i+1, j-1 {
			keep[i], keep[j] = keep[j], keep[i]
		}
		p.files = keep
		for _, f := range p.files {
			p.bytes += f.size
		}
		if len(p.files) > 0 {
			out = append(out, p)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].topic != out[j].topic {
			return out[i].topic < out[j].topic
		}
		return out[i].partition < out[j].partition
	})
	return out, nil
}

// doneOf is the last offset produced of f's partition by the checkpoint,
// or -1.
func doneOf(done map[string]int64, f *fileRef) int64 {
	if v, ok := done[f.topic+"/"+strconv.Itoa(int(f.partition))]; ok {
		return v
	}
	return -1
}

// readFooter opens f's footer and places the file by its pqsink.kafka.*
// metadata.
func (r *Replayer) readFooter(ctx context.Context, f *fileRef) error {
	file, closeFile, err := r.open(ctx, f.key)
	if err != nil {
		return err
	}
	defer closeFile()
	m, err := footerRange(file)
	if err != nil {
		return fmt.Errorf("%s: %w", f.key, err)
	}
	f.topic, f.partition, f.first, f.last, f.footer = m.topic, m.partition, m.first, m.last, true
	return nil
}

// kafkaRange is what a pqsink footer says of the file's records.
type kafkaRange struct {
	topic       string
	partition   int32
	first, last int64
	records     int64
}

// footerRange reads the pqsink.kafka.* entries of a footer. A file without
// them was not written by the sink.
func footerRange(f *reader.File) (kafkaRange, error) {
	var r kafkaRange
	kv := map[string]string{}
	for _, e := range f.Metadata().KeyValueMetadata {
		if e.Value != nil {
			kv[e.Key] = *e.Value
		}
	}
	var ok bool
	if r.topic, ok = kv[kvTopic]; !ok {
		return r, fmt.Errorf("%w: the footer has no %s metadata; replay reads only files the sink wrote (with their _kafka envelope columns)", ErrNotPqsink, kvTopic)
	}
	p, err := strconv.ParseInt(kv[kvPartition], 10, 32)
	if err != nil {
		return r, fmt.Errorf("%w: footer %s: %v", ErrNotPqsink, kvPartition, err)
	}
	r.partition = int32(p)
	for _, e := range []struct {
		key string
		dst *int64
	}{{kvFirstOffset, &r.first}, {kvLastOffset, &r.last}, {kvRecords, &r.records}} {
		v, err := strconv.ParseInt(kv[e.key], 10, 64)
		if err != nil {
			return r, fmt.Errorf("%w: footer %s: %v", ErrNotPqsink, e.key, err)
		}
		*e.dst = v
	}
	return r, nil
}

// open opens an object as a Parquet file; the returned function closes it.
func (r *Replayer) open(ctx context.Context, key string) (*reader.File, func(), error) {
	ra, err := r.store.NewReaderAt(ctx, key)
	if err != nil {
		return nil, nil, fmt.Errorf("opening %s: %w", key, err)
	}
	r.stats.FilesOpened.Add(1)
	f, err := reader.Open(ra, ra.Size(), reader.MaxMemory(r.opts.MaxMemory))
	if err != nil {
		ra.Close()
		return nil, nil, fmt.Errorf("%s: %w", key, err)
	}
	return f, func() { ra.Close() }, nil
}
