package convert

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/linkedin/goavro/v2"

	"github.com/pqsink/pqsink/rowgroup"
	"github.com/pqsink/pqsink/rowgroup/avrorow"
	"github.com/pqsink/pqsink/schema/avro"
	"github.com/pqsink/pqsink/writer"
)

// RecordError is a record of an Avro container file that could not be
// decoded: the file is corrupt, since its writer wrote every record with
// the schema in its header.
type RecordError struct {
	Block  int   // block index, 0 for the first
	Offset int64 // byte offset of the block's header in the file
	Record int64 // index of the record in the block
	Err    error
}

func (e *RecordError) Error() string {
	return fmt.Sprintf("avro container: block %d at offset %d, record %d: %v", e.Block, e.Offset, e.Record, e.Err)
}

func (e *RecordError) Unwrap() error { return e.Err }

// RunAvro converts an Avro object container file (codecs null, deflate,
// snappy, zstandard, bzip2) into one Parquet file whose schema is the
// Parquet schema of the file's writer schema (avro.Schema.Parquet), with
// the writer schema under the avro.schema key-value metadata. opts.Schema
// must be nil; opts.JSON is unused. A truncated or corrupt file is an
// error naming the block and its offset, whatever opts.Errors says: a
// record that does not decode leaves no way to find the next.
func RunAvro(ctx context.Context, in io.Reader, out io.Writer, opts Options) (Stats, error) {
	if opts.Schema != nil {
		return Stats{}, errors.New("convert: an Avro container file brings its own schema")
	}
	cr, err := avro.NewContainerReader(in)
	if err != nil {
		return Stats{}, err
	}
	r, dec, err := openAvro(out, cr.Schema(), &opts, avrorow.Prefix())
	if err != nil {
		return Stats{}, err
	}
	if err := r.convert(ctx, &containerSource{cr: cr, dec: dec, st: &r.st}); err != nil {
		return r.st, err
	}
	r.st.InBytes = cr.Offset()
	return r.finish()
}

// RunAvroJSON converts JSON Lines in Avro's JSON encoding of records of s
// (unions as {"type": value} or null, bytes and fixed as strings of code
// points 0–255) into one Parquet file of s's Parquet schema, with s under
// the avro.schema key-value metadata. goavro reads each line; the compiled
// decoder fills the columns from its binary encoding. Bad lines follow
// opts.Errors as in Run. opts.Schema must be nil.
func RunAvroJSON(ctx context.Context, in io.Reader, out io.Writer, s *avro.Schema, opts Options) (Stats, error) {
	if opts.Schema != nil {
		return Stats{}, errors.New("convert: the Avro schema decides the Parquet schema")
	}
	r, _, err := openAvro(out, s, &opts)
	if err != nil {
		return Stats{}, err
	}
	src := &avroJSONSource{lineSource: newLineSource(in, opts.MaxRecordBytes, &r.st), codec: s.Codec()}
	if err := r.convert(ctx, src); err != nil {
		return r.st, err
	}
	return r.finish()
}

// openAvro starts a run whose rows are Avro records of s, binary encoded,
// in a file of s's Parquet schema with s in its metadata.
func openAvro(out io.Writer, s *avro.Schema, opts *Options, decOpts ...avrorow.Option) (*run, *avrorow.Decoder, error) {
	ps, err := s.Parquet()
	if err != nil {
		return nil, nil, err
	}
	r := newRun(opts)
	wopts := append([]writer.Option{writer.KeyValue(avro.MetadataKey, s.String())}, opts.Writer...)
	var dec *avrorow.Decoder
	err = r.open(out, ps, wopts, func(g *rowgroup.RowGroup) (rowgroup.Payload, error) {
		var err error
		dec, err = avrorow.NewDecoder(g, s, decOpts...)
		return dec, err
	})
	if err != nil {
		return nil, nil, err
	}
	return r, dec, nil
}

// containerSource reads the records of an Avro container file, block by
// block; each is a record for the row builder's Avro decoder, which reads
// it from the start of the rest of its block.
type containerSource struct {
	cr  *avro.ContainerReader
	dec *avrorow.Decoder
	st  *Stats

	blk    avro.Block
	loaded bool   // blk is a block read
	data   []byte // the rest of the block, from the record next returned
	i      int64  // index in the block of the record next returned
	read   bool   // next returned data: the decoder consumed its start
}

func (s *containerSource) next() ([]byte, error) {
	if s.read {
		s.data = s.data[s.dec.Consumed():]
		s.i++
		s.read = false
	}
	for !s.loaded || s.i == s.blk.Count {
		if s.loaded {
			if len(s.data) > 0 {
				return nil, &avro.ContainerError{Block: s.blk.Index, Offset: s.blk.Offset,
					Err: fmt.Errorf("%d bytes left after its %d records", len(s.data), s.blk.Count)}
			}
			s.st.InBytes = s.cr.Offset()
		}
		blk, err := s.cr.Next()
		if err != nil {
			return nil, err // io.EOF at the end
		}
		s.blk, s.loaded, s.data, s.i = blk, true, blk.Data, 0
	}
	s.st.Lines++
	s.read = true
	return s.data, nil
}

// fail ends the run: a record that does not decode is a corrupt file.
func (s *containerSource) fail(err error) error {
	return &RecordError{Block: s.blk.Index, Offset: s.blk.Offset, Record: s.i, Err: err}
}

// avroJSONSource reads lines of Avro's JSON encoding, and returns each as
// its binary encoding.
type avroJSONSource struct {
	*lineSource
	codec *goavro.Codec
	bin   []byte
}

func (s *avroJSONSource) next() ([]byte, error) {
	line, err := s.lineSource.next()
	if err != nil || line == nil {
		return nil, err
	}
	if s.bin, err = avroFromJSON(s.codec, line, s.bin[:0]); err != nil {
		return nil, s.bad(err)
	}
	return s.bin, nil
}

// avroFromJSON turns one record in Avro's JSON encoding into its binary
// encoding, appended to bin, with goavro; a panic of goavro on odd input
// becomes an error.
func avroFromJSON(codec *goavro.Codec, line, bin []byte) (out []byte, err error) {
	defer func() {
		if p := recover(); p != nil {
			out, err = nil, fmt.Errorf("avro json: %v", p)
		}
	}()
	native, rest, err := codec.NativeFromTextual(line)
	if err != nil {
		return nil, fmt.Errorf("avro json: %w", err)
	}
	if !isBlank(rest) {
		return nil, fmt.Errorf("avro json: %d bytes after the record", len(rest))
	}
	if bin, err = codec.BinaryFromNative(bin, native); err != nil {
		return nil, fmt.Errorf("avro json: %w", err)
	}
	return bin, nil
}
