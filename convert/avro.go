package convert

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

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
	var st Stats
	if opts.Schema != nil {
		return st, errors.New("convert: an Avro container file brings its own schema")
	}
	cr, err := avro.NewContainerReader(in)
	if err != nil {
		return st, err
	}
	ps, err := cr.Schema().Parquet()
	if err != nil {
		return st, err
	}
	opts.Schema = ps
	c, err := newAvroRun(out, cr.Schema(), opts, avrorow.Prefix())
	if err != nil {
		return st, err
	}
	for {
		blk, err := cr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return c.st, err
		}
		data := blk.Data
		for i := range blk.Count {
			if err := c.rows.Append(data, nil); err != nil {
				return c.st, &RecordError{Block: blk.Index, Offset: blk.Offset, Record: i, Err: err}
			}
			data = data[c.dec.Consumed():]
			c.st.Lines++
			if err := c.afterRow(ctx); err != nil {
				return c.st, err
			}
		}
		if len(data) > 0 {
			return c.st, &avro.ContainerError{Block: blk.Index, Offset: blk.Offset,
				Err: fmt.Errorf("%d bytes left after its %d records", len(data), blk.Count)}
		}
		c.st.InBytes = cr.Offset()
	}
	c.st.InBytes = cr.Offset()
	return c.finish()
}

// RunAvroJSON converts JSON Lines in Avro's JSON encoding of records of s
// (unions as {"type": value} or null, bytes and fixed as strings of code
// points 0–255) into one Parquet file of s's Parquet schema, with s under
// the avro.schema key-value metadata. goavro reads each line; the compiled
// decoder fills the columns from its binary encoding. Bad lines follow
// opts.Errors as in Run. opts.Schema must be nil.
func RunAvroJSON(ctx context.Context, in io.Reader, out io.Writer, s *avro.Schema, opts Options) (Stats, error) {
	var st Stats
	if opts.Schema != nil {
		return st, errors.New("convert: the Avro schema decides the Parquet schema")
	}
	ps, err := s.Parquet()
	if err != nil {
		return st, err
	}
	opts.Schema = ps
	c, err := newAvroRun(out, s, opts)
	if err != nil {
		return st, err
	}
	codec := s.Codec()
	if opts.MaxRecordBytes <= 0 {
		opts.MaxRecordBytes = DefaultMaxRecordBytes
	}
	var bin []byte
	lines := newLineReaderMax(in, opts.MaxRecordBytes)
	for {
		if err := ctx.Err(); err != nil {
			return c.st, err
		}
		line, err := lines.next()
		if err == io.EOF {
			break
		}
		if err != nil && !errors.Is(err, ErrRecordTooLong) {
			return c.st, fmt.Errorf("convert: read line %d: %w", c.st.Lines+1, err)
		}
		c.st.Lines++
		c.st.InBytes += int64(len(line)) + lines.skipped
		if err == nil && isBlank(line) {
			continue
		}
		if err == nil {
			bin, err = avroFromJSON(codec, line, bin[:0])
		}
		if err == nil {
			err = c.rows.Append(bin, nil)
		}
		if err != nil {
			lerr := &LineError{Line: c.st.Lines, Err: err}
			if opts.Errors == Fail {
				return c.st, lerr
			}
			c.st.Skipped++
			if opts.Rejects != nil {
				if err := writeRejectN(opts.Rejects, lerr, line, lines.skipped); err != nil {
					return c.st, fmt.Errorf("convert: write rejected line %d: %w", c.st.Lines, err)
				}
			}
			continue
		}
		if err := c.afterRow(ctx); err != nil {
			return c.st, err
		}
	}
	return c.finish()
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

// avroRun is the row group loop shared by both Avro inputs.
type avroRun struct {
	opts         Options
	st           Stats
	w            *writer.Writer
	g            *rowgroup.RowGroup
	dec          *avrorow.Decoder
	rows         *rowgroup.Builder
	start        time.Time
	nextProgress time.Time
	n            int64
}

func newAvroRun(out io.Writer, s *avro.Schema, opts Options, decOpts ...avrorow.Option) (*avroRun, error) {
	if opts.RowGroupSize <= 0 {
		opts.RowGroupSize = DefaultRowGroupSize
	}
	if opts.ProgressEvery <= 0 {
		opts.ProgressEvery = 2 * time.Second
	}
	wopts := append([]writer.Option{writer.KeyValue(avro.MetadataKey, s.String())}, opts.Writer...)
	w, err := writer.New(out, opts.Schema, wopts...)
	if err != nil {
		return nil, err
	}
	c := &avroRun{opts: opts, w: w, g: rowgroup.New(opts.Schema), start: time.Now()}
	c.nextProgress = c.start.Add(opts.ProgressEvery)
	if c.dec, err = avrorow.NewDecoder(c.g, s, decOpts...); err != nil {
		return nil, fmt.Errorf("convert: %w", err)
	}
	if c.rows, err = rowgroup.NewBuilder(c.g, c.dec); err != nil {
		return nil, fmt.Errorf("convert: %w", err)
	}
	return c, nil
}

func (c *avroRun) flush() error {
	if c.g.NumRows() == 0 {
		return nil
	}
	if err := c.w.WriteRowGroup(c.g); err != nil {
		return err
	}
	c.st.Rows += int64(c.g.NumRows())
	c.st.RowGroups++
	c.g.Reset()
	return nil
}

// afterRow flushes a full row group, and now and then checks ctx and
// reports progress.
func (c *avroRun) afterRow(ctx context.Context) error {
	c.n++
	if c.g.NumRows()&15 == 0 {
		size := int64(c.g.Size())
		if size >= c.opts.RowGroupSize {
			if err := c.flush(); err != nil {
				return err
			}
		} else if c.st.RowGroups == 0 && c.g.NumRows() == reserveAfter && size > 0 {
			c.g.Reserve(int(c.opts.RowGroupSize * reserveAfter / size))
		}
	}
	if c.n&1023 == 0 {
		if err := ctx.Err(); err != nil {
			return err
		}
		if c.opts.Progress != nil && time.Now().After(c.nextProgress) {
			c.nextProgress = time.Now().Add(c.opts.ProgressEvery)
			progress(c.opts.Progress, &c.st, int64(c.g.NumRows()), c.w.Offset(), c.start)
		}
	}
	return nil
}

func (c *avroRun) finish() (Stats, error) {
	if err := c.flush(); err != nil {
		return c.st, err
	}
	md, err := c.w.Close()
	if err != nil {
		return c.st, err
	}
	c.st.Metadata = md
	c.st.OutBytes = c.w.Offset()
	if c.opts.Progress != nil {
		progress(c.opts.Progress, &c.st, 0, c.w.Offset(), c.start)
	}
	return c.st, nil
}
