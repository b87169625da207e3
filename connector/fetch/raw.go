package fetch

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"sync"
	"time"

	"github.com/segmentio/kafka-go/compress"
	"github.com/segmentio/kafka-go/protocol"
	fetchapi "github.com/segmentio/kafka-go/protocol/fetch"

	"github.com/pqsink/pqsink/rowgroup"
)

// The fetch response's records are decoded here rather than by
// kafka-go's protocol package, which reads them a byte at a time through
// its page buffers, on the one goroutine that serves a broker connection,
// and allocates a reference per key and value: in `pqsink bench` that was
// about 30% of the sink's CPU. A fetch request is sent through kafka-go's
// transport (connections, SASL, TLS, version negotiation, routing to the
// leader) as a raw exchange: the request is written by kafka-go, and the
// response is read whole into a buffer that the multiplexer reuses; it is
// decoded on the fetching goroutine, record batches straight from the
// buffer into the partitions' arenas. What this decoder does not handle
// (fetch versions before 4, message sets of magic 0 and 1) is decoded by
// kafka-go as before.

// minRawFetchVersion is the first fetch version whose response the raw
// decoder reads: the one that brought record batches (magic 2).
const minRawFetchVersion = 4

// rawFetch is a fetch request that reads its response raw. kafka-go's
// connection calls Required with the negotiated versions, then
// RawExchange instead of its own round trip.
type rawFetch struct {
	*fetchapi.Request
	clientID      string
	correlationID int32
	version       int16
	buf           []byte // the response body is read into it
}

// rawResponse is a fetch response read whole: body holds what follows
// the correlation id.
type rawResponse struct {
	version int16
	body    []byte
}

// ApiKey is the fetch API's.
func (*rawResponse) ApiKey() protocol.ApiKey { return protocol.Fetch }

// Required records the negotiated fetch version; the exchange is always
// raw, as kafka-go's own round trip cannot write this type.
func (r *rawFetch) Required(versions map[protocol.ApiKey]int16) bool {
	r.version = versions[protocol.Fetch]
	return true
}

// RawExchange writes the request and reads its response: whole into
// r.buf from version 4 on, decoded by kafka-go before.
func (r *rawFetch) RawExchange(rw io.ReadWriter) (protocol.Message, error) {
	if r.version < minRawFetchVersion {
		return protocol.RoundTrip(rw, r.version, r.correlationID, r.clientID, r.Request)
	}
	if err := protocol.WriteRequest(rw, r.version, r.correlationID, r.clientID, r.Request); err != nil {
		return nil, err
	}
	var head [8]byte
	if _, err := io.ReadFull(rw, head[:]); err != nil {
		return nil, fmt.Errorf("reading the fetch response: %w", dontExpectEOF(err))
	}
	size := int32(binary.BigEndian.Uint32(head[:4]))
	if id := int32(binary.BigEndian.Uint32(head[4:])); id != r.correlationID {
		return nil, fmt.Errorf("fetch response: correlation id %d, expected %d", id, r.correlationID)
	}
	if size < 4 {
		return nil, fmt.Errorf("fetch response: size %d", size)
	}
	n := int(size) - 4
	if cap(r.buf) < n {
		r.buf = make([]byte, n)
	}
	body := r.buf[:n]
	if _, err := io.ReadFull(rw, body); err != nil {
		return nil, fmt.Errorf("reading the fetch response: %w", dontExpectEOF(err))
	}
	return &rawResponse{version: r.version, body: body}, nil
}

func dontExpectEOF(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}

var (
	_ protocol.RawExchanger  = (*rawFetch)(nil)
	_ protocol.BrokerMessage = (*rawFetch)(nil)
)

// errShort is a response or record cut short.
var errShort = errors.New("truncated")

// wire reads the big-endian fields of a response; the first read past
// the end sets err, and every read after it returns zero.
type wire struct {
	b   []byte
	err error
}

func (w *wire) take(n int) []byte {
	if w.err != nil || n < 0 || n > len(w.b) {
		if w.err == nil {
			w.err = errShort
		}
		return nil
	}
	b := w.b[:n:n]
	w.b = w.b[n:]
	return b
}

func (w *wire) int16() int16 {
	if b := w.take(2); b != nil {
		return int16(binary.BigEndian.Uint16(b))
	}
	return 0
}

func (w *wire) int32() int32 {
	if b := w.take(4); b != nil {
		return int32(binary.BigEndian.Uint32(b))
	}
	return 0
}

func (w *wire) int64() int64 {
	if b := w.take(8); b != nil {
		return int64(binary.BigEndian.Uint64(b))
	}
	return 0
}

func (w *wire) string() string {
	n := w.int16()
	if n < 0 {
		return ""
	}
	return string(w.take(int(n)))
}

// varint reads a zigzag varint, as record fields are.
func (w *wire) varint() int64 {
	if w.err != nil {
		return 0
	}
	v, n := binary.Varint(w.b)
	if n <= 0 {
		w.err = errShort
		return 0
	}
	w.b = w.b[n:]
	return v
}

// varbytes reads a varint length and that many bytes; a negative length
// is null (nil), zero empty but not nil.
func (w *wire) varbytes() []byte {
	n := w.varint()
	if n < 0 || w.err != nil {
		return nil
	}
	if n > int64(len(w.b)) {
		w.err = errShort
		return nil
	}
	return w.take(int(n))
}

// rawPartition is one partition of a raw fetch response.
type rawPartition struct {
	topic         string
	id            int32
	errorCode     int16
	highWatermark int64
	logStart      int64
	records       []byte // the record set, nil when null
}

// parseRawResponse reads a raw fetch response (version 4 to 11) into its
// top-level error code and partitions; the records stay in the body.
func parseRawResponse(r *rawResponse, parts []rawPartition) (int16, []rawPartition, error) {
	w := &wire{b: r.body}
	v := r.version
	w.int32() // throttle time (v1+)
	var code int16
	if v >= 7 {
		code = w.int16()
		w.int32() // session id
	}
	for nt := w.int32(); nt > 0 && w.err == nil; nt-- {
		topic := w.string()
		for np := w.int32(); np > 0 && w.err == nil; np-- {
			p := rawPartition{topic: topic}
			p.id = w.int32()
			p.errorCode = w.int16()
			p.highWatermark = w.int64()
			w.int64() // last stable offset (v4+)
			if v >= 5 {
				p.logStart = w.int64()
			}
			for na := w.int32(); na > 0 && w.err == nil; na-- {
				w.take(16) // aborted transaction: producer id, first offset
			}
			if v >= 11 {
				w.int32() // preferred read replica
			}
			if n := w.int32(); n >= 0 {
				p.records = w.take(int(n))
				if p.records == nil && w.err == nil {
					p.records = []byte{}
				}
			}
			parts = append(parts, p)
		}
	}
	if w.err != nil {
		return 0, parts, fmt.Errorf("decoding the fetch response: %w", w.err)
	}
	return code, parts, nil
}

// Offsets within a record batch's header (magic 2).
const (
	batchLengthOffset = 8  // after the base offset
	batchMagicOffset  = 16 // after the length and the partition leader epoch
	batchCRCOffset    = 17
	batchAttrOffset   = 21 // the CRC covers the batch from here on
	batchRecordsStart = 61 // the records (or their compressed block)
)

// castagnoli is the CRC table of record batches.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// rawDecoder decodes record sets: it keeps the buffer that compressed
// batches decompress into, from one to the next.
type rawDecoder struct {
	plain   bytes.Buffer
	headers []rawHeader       // the current record's headers, as read
	slab    []rowgroup.Header // the records' headers are carved from it
	keys    map[string]string // header keys seen, so that each is one string
}

// rawHeader is a header as read from a record, its value not yet copied.
type rawHeader struct{ key, value []byte }

// Bounds of the header keys a rawDecoder keeps: keys repeat from record
// to record (a few tracing or content-type keys), and each kept key saves
// a string per header.
const (
	maxHeaderKeys   = 256
	maxHeaderKeyLen = 128
)

// headerKey returns key as a string, the one already made when it was
// seen before.
func (d *rawDecoder) headerKey(key []byte) string {
	if s, ok := d.keys[string(key)]; ok {
		return s
	}
	s := string(key)
	if len(key) <= maxHeaderKeyLen && len(d.keys) < maxHeaderKeys {
		if d.keys == nil {
			d.keys = map[string]string{}
		}
		d.keys[s] = s
	}
	return s
}

// takeHeaders returns n headers carved from the slab, which is renewed
// when it runs out with room for as many headers for each of the
// records left in the batch.
func (d *rawDecoder) takeHeaders(n, recordsLeft int) []rowgroup.Header {
	if cap(d.slab)-len(d.slab) < n {
		d.slab = make([]rowgroup.Header, 0, max(n*recordsLeft, 16))
	}
	start := len(d.slab)
	d.slab = d.slab[:start+n]
	return d.slab[start : start+n : start+n]
}

// readRawRecords decodes a record set from offset *next on, as
// readRecords does with kafka-go's record reader: records before *next
// are skipped, control batches are skipped, a batch cut short by the
// fetch's size limit ends the set, and keys, values and header values are
// copied into the arena. A bad batch after a good one ends the set, as it
// did with kafka-go; a bad first batch is an error. A message set of
// magic 0 or 1 is left to kafka-go.
func (d *rawDecoder) readRawRecords(set []byte, next *int64, arena *[]byte, batch []Record) ([]Record, int64, error) {
	var size int64
	start := len(batch)
	for batches := 0; len(set) > 0; batches++ {
		if len(set) < batchMagicOffset+1 {
			if batches > 0 {
				break
			}
			return fail(batch, start, fmt.Errorf("impossible record set shorter than %d bytes", batchMagicOffset+1))
		}
		if magic := set[batchMagicOffset]; magic != 2 {
			if magic > 2 {
				if batches > 0 {
					break
				}
				return fail(batch, start, fmt.Errorf("unsupported message version %d", magic))
			}
			return readLegacy(set, next, arena, batch, size)
		}
		length := int64(int32(binary.BigEndian.Uint32(set[batchLengthOffset:])))
		if length+12 > int64(len(set)) || length < batchRecordsStart-12 {
			break // cut short by the fetch's size limit
		}
		b := set[:12+length]
		set = set[12+length:]
		var n int64
		var err error
		batch, n, err = d.readBatch(b, next, arena, batch)
		size += n
		if err != nil {
			if batches > 0 {
				break
			}
			return fail(batch, start, err)
		}
	}
	return batch, size, nil
}

// fail drops the records a failed read appended.
func fail(batch []Record, start int, err error) ([]Record, int64, error) {
	clear(batch[start:])
	return batch[:start], 0, err
}

// readBatch decodes one record batch (magic 2), whole and checked.
func (d *rawDecoder) readBatch(b []byte, next *int64, arena *[]byte, batch []Record) ([]Record, int64, error) {
	if crc := binary.BigEndian.Uint32(b[batchCRCOffset:]); crc32.Checksum(b[batchAttrOffset:], castagnoli) != crc {
		return batch, 0, fmt.Errorf("crc32 checksum mismatch (found=%d)", crc)
	}
	h := &wire{b: b}
	base := h.int64()
	h.take(batchAttrOffset - 8)
	attrs := protocol.Attributes(h.int16())
	h.int32() // last offset delta
	first := h.int64()
	h.take(8 + 8 + 2 + 4) // max timestamp, producer id and epoch, base sequence
	count := h.int32()
	if attrs.Control() {
		return batch, 0, nil
	}
	records := h.b
	if c := attrs.Compression(); c != 0 {
		codec := c.Codec()
		if codec == nil {
			return batch, 0, fmt.Errorf("unsupported compression codec (%d)", c)
		}
		if err := d.decompress(codec, records); err != nil {
			return batch, 0, fmt.Errorf("decompressing a record batch: %w", err)
		}
		records = d.plain.Bytes()
	}
	w := &wire{b: records}
	var size int64
	read := 0
	for i := int32(0); i < count; i++ {
		w.varint() // record length
		w.take(1)  // record attributes
		ts := first + w.varint()
		offset := base + w.varint()
		key := w.varbytes()
		value := w.varbytes()
		nh := w.varint()
		if w.err != nil {
			break
		}
		d.headers = d.headers[:0]
		if nh > 0 {
			if nh > int64(len(w.b)) { // each header takes two bytes at least
				w.err = errShort
				break
			}
			for range nh {
				d.headers = append(d.headers, rawHeader{key: w.varbytes(), value: w.varbytes()})
			}
			if w.err != nil {
				break
			}
		}
		read++
		if offset < *next {
			continue // a batch may start before the requested offset
		}
		rec := Record{Offset: offset, Time: time.Unix(ts/1000, (ts%1000)*int64(time.Millisecond))}
		rec.Key = copyBytes(key, arena, &size)
		rec.Value = copyBytes(value, arena, &size)
		if len(d.headers) > 0 {
			rec.Headers = d.takeHeaders(len(d.headers), int(count-i))
			for j, h := range d.headers {
				rec.Headers[j] = rowgroup.Header{Key: d.headerKey(h.key), Value: copyBytes(h.value, arena, &size)}
			}
		}
		batch = append(batch, rec)
		size += recordOverhead
		*next = offset + 1
	}
	if w.err != nil && read == 0 {
		return batch, size, fmt.Errorf("decoding a record: %w", w.err)
	}
	return batch, size, nil
}

// decompress inflates a batch's records into d.plain.
func (d *rawDecoder) decompress(codec compress.Codec, b []byte) error {
	r := codec.NewReader(bytes.NewReader(b))
	defer r.Close()
	d.plain.Reset()
	_, err := d.plain.ReadFrom(r)
	return err
}

// readLegacy decodes the rest of a record set, from a message set of
// magic 0 or 1 on, with kafka-go, as before the raw decoder.
func readLegacy(set []byte, next *int64, arena *[]byte, batch []Record, size int64) ([]Record, int64, error) {
	framed := make([]byte, 4+len(set))
	binary.BigEndian.PutUint32(framed, uint32(len(set)))
	copy(framed[4:], set)
	var rs protocol.RecordSet
	if _, err := rs.ReadFrom(bytes.NewReader(framed)); err != nil {
		if len(batch) > 0 {
			return batch, size, nil
		}
		return batch, 0, err
	}
	if rs.Records == nil {
		return batch, size, nil
	}
	more, n, err := readRecords(rs.Records, next, arena, batch)
	if err != nil {
		return more, 0, err
	}
	return more, size + n, nil
}

// maxFreeBuffers is the most response buffers a bufPool keeps.
const maxFreeBuffers = 2

// bufPool keeps response buffers from one fetch to the next.
type bufPool struct {
	mu   sync.Mutex
	free [][]byte
}

// get returns a buffer, empty or kept from an earlier response.
func (p *bufPool) get() []byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	if n := len(p.free); n > 0 {
		b := p.free[n-1]
		p.free = p.free[:n-1]
		return b
	}
	return nil
}

// put keeps a buffer for a later response. Kept buffers are outside the
// memory budget (a fetch reserves its response while it is out), so only
// a couple are kept: enough for the fetches of a busy partition to
// reuse them one after the other.
// A buffer larger than limit (one of a rare large fetch, such as a
// record of many megabytes) is let go rather than kept outside the
// budget.
func (p *bufPool) put(b []byte, limit int64) {
	if b == nil || int64(cap(b)) > limit {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.free) < maxFreeBuffers {
		p.free = append(p.free, b[:0])
	}
}
