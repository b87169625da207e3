package connector

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/pqsink/pqsink/meta"
	"github.com/pqsink/pqsink/objstore"
	"github.com/pqsink/pqsink/rowgroup"
	"github.com/pqsink/pqsink/schema"
	"github.com/pqsink/pqsink/schema/avro"
	"github.com/pqsink/pqsink/writer"
)

// Footer key-value entries that record a file's Kafka range (ARCHITECTURE:
// every file's footer says where its records came from), so that the
// adoption of an existing object and replay need nothing but the file.
const (
	kvTopic       = "pqsink.kafka.topic"
	kvPartition   = "pqsink.kafka.partition"
	kvFirstOffset = "pqsink.kafka.first_offset"
	kvLastOffset  = "pqsink.kafka.last_offset"
	kvRecords     = "pqsink.kafka.records"
)

// fileBuffers are what an open file holds in memory: the row group being
// filled, the row builder over it and the Parquet writer. They outlive a
// file: the next file of the same schema reuses them, buffers and
// dictionaries already grown.
type fileBuffers struct {
	schema *schema.Schema
	g      *rowgroup.RowGroup
	b      *rowgroup.Builder
	w      *writer.Writer // nil until the first file
	av     *avroBuffers   // avro: the reader schema and a builder per writer schema
}

// openFile is one file being written: a run of one path's records of one
// partition, streamed to an upload row group by row group.
type openFile struct {
	id          string // path identity
	key         string
	first, last int64 // offsets of the first and last record
	records     int64
	opened      time.Time
	deadline    time.Time // schedule rotation; zero when there is none
	up          objstore.Upload
	buf         *fileBuffers
	sinceCheck  int // rows since the row group size was last checked
}

// newFileBuffers builds the buffers of a schema.
func newFileBuffers(f *format, s *schema.Schema) (*fileBuffers, error) {
	g := rowgroup.New(s)
	payload, err := f.newPayload(g)
	if err != nil {
		return nil, err
	}
	b, err := rowgroup.NewBuilder(g, payload)
	if err != nil {
		return nil, err
	}
	return &fileBuffers{schema: s, g: g, b: b}, nil
}

// start begins the Parquet file on up.
func (fb *fileBuffers) start(up objstore.Upload, opts []writer.Option) error {
	fb.g.Reset()
	if fb.w == nil {
		w, err := writer.New(up, fb.schema, opts...)
		if err != nil {
			return err
		}
		fb.w = w
		return nil
	}
	return fb.w.Reset(up)
}

// flush encodes the buffered rows as the file's next row group, which
// goes out to the upload at once.
func (f *openFile) flush() error {
	if f.buf.g.NumRows() == 0 {
		return nil
	}
	if err := f.buf.w.WriteRowGroup(f.buf.g); err != nil {
		return fmt.Errorf("%s: row group: %w", f.key, err)
	}
	f.buf.g.Reset()
	return nil
}

// close writes the rest of the file and its footer, with its Kafka range.
func (f *openFile) close(topic string, partition int32) (*meta.FileMetaData, error) {
	if err := f.flush(); err != nil {
		return nil, err
	}
	w := f.buf.w
	w.SetKeyValue(kvTopic, topic)
	w.SetKeyValue(kvPartition, strconv.Itoa(int(partition)))
	w.SetKeyValue(kvFirstOffset, strconv.FormatInt(f.first, 10))
	w.SetKeyValue(kvLastOffset, strconv.FormatInt(f.last, 10))
	w.SetKeyValue(kvRecords, strconv.FormatInt(f.records, 10))
	if f.buf.av != nil {
		// As parquet-java does: the Avro schema the rows follow.
		w.SetKeyValue(avro.MetadataKey, f.buf.av.reader.avro.String())
	}
	md, err := w.Close()
	if err != nil {
		return nil, fmt.Errorf("%s: footer: %w", f.key, err)
	}
	return md, nil
}

// abort discards the upload; nothing of the file is left in the store.
func (f *openFile) abort(ctx context.Context) error {
	if f.up == nil {
		return nil
	}
	err := f.up.Abort(ctx)
	f.up = nil
	return err
}

// fileRange is the Kafka range a file's footer records.
type fileRange struct {
	topic       string
	partition   int32
	first, last int64
	records     int64
}

// rangeOf reads the Kafka range of a file from its footer's key-value
// metadata.
func rangeOf(md *meta.FileMetaData) (fileRange, error) {
	kv := map[string]string{}
	for _, e := range md.KeyValueMetadata {
		if e.Value != nil {
			kv[e.Key] = *e.Value
		}
	}
	var r fileRange
	r.topic = kv[kvTopic]
	if r.topic == "" {
		return r, fmt.Errorf("footer has no %s: not a pqsink file", kvTopic)
	}
	for _, f := range []struct {
		key string
		dst *int64
	}{{kvFirstOffset, &r.first}, {kvLastOffset, &r.last}, {kvRecords, &r.records}} {
		v, err := strconv.ParseInt(kv[f.key], 10, 64)
		if err != nil {
			return r, fmt.Errorf("footer %s: %w", f.key, err)
		}
		*f.dst = v
	}
	p, err := strconv.ParseInt(kv[kvPartition], 10, 32)
	if err != nil {
		return r, fmt.Errorf("footer %s: %w", kvPartition, err)
	}
	r.partition = int32(p)
	return r, nil
}
