package convert

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/pqsink/pqsink/rowgroup"
	"github.com/pqsink/pqsink/rowgroup/protorow"
	"github.com/pqsink/pqsink/schema/protobuf"
	"github.com/pqsink/pqsink/writer"
)

// RunProtobuf converts length-delimited Protobuf messages of type md (each
// a varint length, then the message's bytes: the framing of
// writeDelimitedTo, and of protoc --encode outputs each prefixed with
// their length) into one Parquet file of md's Parquet schema
// (protobuf.Parquet), with md's full name under protobuf.MessageKey. The
// compiled decoder of rowgroup/protorow fills the columns. A message that
// does not decode follows opts.Errors as a bad line does in Run (its Line
// is the message's number, from 1; the rejects hold its bytes in base64);
// a length prefix that is cut short or longer than the input is an error
// that ends the run, since the next message cannot be found. A message
// over opts.MaxRecordBytes is a bad record, skipped without being held.
// opts.Schema must be nil.
func RunProtobuf(ctx context.Context, in io.Reader, out io.Writer, md protoreflect.MessageDescriptor, opts Options) (Stats, error) {
	if opts.Schema != nil {
		return Stats{}, errors.New("convert: the Protobuf message decides the Parquet schema")
	}
	ps, err := protobuf.Parquet(md)
	if err != nil {
		return Stats{}, err
	}
	r := newRun(&opts)
	wopts := append([]writer.Option{writer.KeyValue(protobuf.MessageKey, string(md.FullName()))}, opts.Writer...)
	err = r.open(out, ps, wopts, func(g *rowgroup.RowGroup) (rowgroup.Payload, error) {
		return protorow.NewDecoder(g, md)
	})
	if err != nil {
		return Stats{}, err
	}
	src := &delimitedSource{r: bufio.NewReaderSize(in, 1<<20), max: opts.MaxRecordBytes, st: &r.st}
	if err := r.convert(ctx, src); err != nil {
		return r.st, err
	}
	return r.finish()
}

// delimitedSource reads varint-length-prefixed messages.
type delimitedSource struct {
	r   *bufio.Reader
	max int64
	st  *Stats
	buf []byte
}

// ErrFraming is wrapped by the error of a length prefix that is cut short,
// too long a varint, or longer than the input.
var ErrFraming = errors.New("length-delimited input is cut short or corrupt")

func (s *delimitedSource) next() ([]byte, error) {
	var prefix [maxVarintLen]byte
	n := 0
	for {
		c, err := s.r.ReadByte()
		if err == io.EOF && n == 0 {
			return nil, io.EOF
		}
		if err != nil {
			return nil, fmt.Errorf("convert: message %d: length prefix: %w (%w)", s.st.Lines+1, ErrFraming, err)
		}
		if n == len(prefix) {
			return nil, fmt.Errorf("convert: message %d: %w: length prefix longer than 10 bytes", s.st.Lines+1, ErrFraming)
		}
		prefix[n] = c
		n++
		if c < 0x80 {
			break
		}
	}
	size, m := protowire.ConsumeVarint(prefix[:n])
	if m < 0 {
		return nil, fmt.Errorf("convert: message %d: %w: %v", s.st.Lines+1, ErrFraming, protowire.ParseError(m))
	}
	s.st.Lines++
	s.st.InBytes += int64(n)
	if size > uint64(s.max) {
		skipped, err := s.r.Discard(int(min(size, 1<<62)))
		s.st.InBytes += int64(skipped)
		if err != nil {
			return nil, fmt.Errorf("convert: message %d: %w: %d bytes announced, %d left", s.st.Lines, ErrFraming, size, skipped)
		}
		return nil, &badRecord{line: s.st.Lines, err: fmt.Errorf("%w: a message of %d bytes", ErrRecordTooLong, size), tooLong: int64(size)}
	}
	if s.buf == nil || cap(s.buf) < int(size) {
		// Never nil, even for an empty message: nil is no record.
		s.buf = make([]byte, size, max(size, 64))
	}
	s.buf = s.buf[:size]
	got, err := io.ReadFull(s.r, s.buf)
	s.st.InBytes += int64(got)
	if err != nil {
		return nil, fmt.Errorf("convert: message %d: %w: %d bytes announced, %d left", s.st.Lines, ErrFraming, size, got)
	}
	return s.buf, nil
}

// maxVarintLen is the length of the longest varint.
const maxVarintLen = 10

func (s *delimitedSource) fail(err error) error {
	return &badRecord{line: s.st.Lines, err: err, input: s.buf}
}
