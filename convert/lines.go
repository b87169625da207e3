package convert

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"unicode/utf8"
)

// lineSource reads the lines of JSON Lines input as records: each line is
// a record, blank lines make no row, and a line over the record size
// limit is a bad record. It counts the lines and bytes read in st.
type lineSource struct {
	lines *lineReader
	st    *Stats
	line  []byte // the last line read
}

func newLineSource(in io.Reader, max int64, st *Stats) *lineSource {
	return &lineSource{lines: newLineReader(in, max), st: st}
}

// next returns the next line, nil for a blank one, a *badRecord for one
// too long, or io.EOF.
func (s *lineSource) next() ([]byte, error) {
	line, err := s.lines.next()
	s.line = nil
	if err == io.EOF {
		return nil, err
	}
	if err != nil && !errors.Is(err, ErrRecordTooLong) {
		return nil, fmt.Errorf("convert: read line %d: %w", s.st.Lines+1, err)
	}
	s.st.Lines++
	s.st.InBytes += int64(len(line)) + s.lines.skipped
	if err != nil {
		return nil, &badRecord{line: s.st.Lines, err: err, tooLong: s.lines.skipped}
	}
	if isBlank(line) {
		return nil, nil
	}
	s.line = line
	return line, nil
}

// fail makes the row builder's error a bad record: the line does not fit
// the schema.
func (s *lineSource) fail(err error) error {
	return s.bad(err)
}

// bad is the last line, rejected for err.
func (s *lineSource) bad(err error) *badRecord {
	return &badRecord{line: s.st.Lines, err: err, input: s.line}
}

func isBlank(b []byte) bool {
	for _, c := range b {
		switch c {
		case ' ', '\t', '\r', '\n':
		default:
			return false
		}
	}
	return true
}

// writeReject writes the reject report of a line: the input byte for
// byte, or, for a line too long to hold (skipped > 0), its length.
func writeReject(w io.Writer, e *LineError, line []byte, skipped int64) error {
	buf := fmt.Appendf(nil, `{"line":%d,"error":%s,`, e.Line, quote(e.Error()))
	switch {
	case skipped > 0:
		buf = fmt.Appendf(buf, `"input_bytes":%d}`, skipped)
	case utf8.Valid(line):
		buf = append(buf, `"input":`...)
		buf = append(buf, quote(string(line))...)
		buf = append(buf, '}')
	default:
		// A JSON string holds only UTF-8: keep the exact bytes in base64,
		// so that the line can be repaired and replayed.
		buf = append(buf, `"input_base64":"`...)
		buf = base64.StdEncoding.AppendEncode(buf, line)
		buf = append(buf, `"}`...)
	}
	_, err := w.Write(append(buf, '\n'))
	return err
}

// lineReader returns lines without their terminator, up to max bytes long,
// and skips a UTF-8 byte order mark at the start of the input. The returned
// slice is valid until the next call.
type lineReader struct {
	r       *bufio.Reader
	buf     []byte
	max     int64
	started bool
	// skipped is the length of the last line when it was over max: read
	// and dropped without being held, and reported with ErrRecordTooLong.
	skipped int64
}

func newLineReader(r io.Reader, max int64) *lineReader {
	return &lineReader{r: bufio.NewReaderSize(r, 1<<20), max: max}
}

// bom is the UTF-8 encoding of U+FEFF, which some editors put at the start
// of a text file.
const bom = "\xef\xbb\xbf"

func (l *lineReader) next() ([]byte, error) {
	if !l.started {
		l.started = true
		if b, err := l.r.Peek(len(bom)); err == nil && string(b) == bom {
			l.r.Discard(len(bom))
		}
	}
	l.skipped = 0
	line, err := l.r.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		l.buf = append(l.buf[:0], line...)
		for err == bufio.ErrBufferFull {
			line, err = l.r.ReadSlice('\n')
			if int64(len(l.buf)+len(line)) > l.max+1 {
				// Over the limit: read on to the end of the line without
				// keeping it.
				n := int64(len(l.buf) + len(line))
				for err == bufio.ErrBufferFull {
					line, err = l.r.ReadSlice('\n')
					n += int64(len(line))
				}
				if err != nil && err != io.EOF {
					return nil, err
				}
				if len(line) > 0 && line[len(line)-1] == '\n' {
					n--
				}
				l.skipped = n
				return nil, fmt.Errorf("%w: %d bytes, over the limit of %d (--max-record-bytes)", ErrRecordTooLong, n, l.max)
			}
			l.buf = append(l.buf, line...)
		}
		line = l.buf
	}
	if err == io.EOF && len(line) > 0 {
		err = nil
	}
	if err != nil {
		return nil, err
	}
	if n := len(line); n > 0 && line[n-1] == '\n' {
		line = line[:n-1]
	}
	if int64(len(line)) > l.max {
		l.skipped = int64(len(line))
		return nil, fmt.Errorf("%w: %d bytes, over the limit of %d (--max-record-bytes)", ErrRecordTooLong, len(line), l.max)
	}
	return line, nil
}

// quote renders s, valid UTF-8, as a JSON string.
func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
