package variant

// The node-tree Builder that the one-pass Builder replaced, kept as the
// reference that tests hold the new one to: it builds a tree of 48-byte
// nodes and lays the value out at Finish.

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"

	"github.com/pqsink/pqsink/internal/jsonscan"
)

const (
	refScalar uint8 = iota
	refObject
	refArray
)

// refEncode encodes json as AppendJSON did with the node-tree Builder.
func refEncode(json []byte, lastWins, lossy bool) ([]byte, []byte, error) {
	var scan jsonscan.Scanner
	b := &refBuilder{lastWins: lastWins}
	return b.encode(&scan, nil, nil, json, lossy)
}

// encode is refEncode with the scanner, builder and output slices reused.
func (b *refBuilder) encode(scan *jsonscan.Scanner, md, val, json []byte, lossy bool) ([]byte, []byte, error) {
	scan.Reset(json)
	scan.SetMaxDepth(MaxDepth)
	b.Reset()
	for {
		k, err := scan.Next()
		if err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return nil, nil, fmt.Errorf("variant: %w", err)
		}
		switch k {
		case jsonscan.Null:
			b.prim(primNull)
		case jsonscan.True:
			b.prim(primTrue)
		case jsonscan.False:
			b.prim(primFalse)
		case jsonscan.String:
			b.stringBytes(scan.Bytes())
		case jsonscan.Number:
			start := len(b.data)
			var err error
			b.data, err = appendNumber(b.data, scan.Bytes(), lossy)
			if err != nil {
				return nil, nil, err
			}
			b.scalarFrom(start)
		case jsonscan.Key:
			b.key(scan.Bytes(), scan.Offset())
		case jsonscan.BeginObject:
			b.beginContainer(refObject)
		case jsonscan.EndObject:
			b.end(refObject)
		case jsonscan.BeginArray:
			b.beginContainer(refArray)
		case jsonscan.EndArray:
			b.end(refArray)
		}
	}
	return b.Finish(md, val)
}

// Builder assembles one Variant from typed values, for sources that are
// not JSON (Avro records, Kafka envelopes, reconstruction of shredded
// columns). Values are added in document order: scalars with the typed
// methods, objects between BeginObject and EndObject with a Key before
// each field, arrays between BeginArray and EndArray. Object fields may be
// added in any order; Finish sorts them by name and writes a sorted,
// de-duplicated dictionary with the smallest widths that fit.
//
// A Builder keeps its buffers across Finish calls, so reusing one per
// goroutine makes building allocation-free once the buffers have grown.
// The first misuse or invalid input is remembered and returned by Finish.
// The zero Builder is ready to use.
type refBuilder struct {
	nodes    []refNode
	data     []byte  // encoded scalars
	open     []int   // indexes of open containers in nodes
	pending  int     // 1 + key id of the next field's name, 0 if none
	pendPos  int     // source offset of the pending key
	rootDone bool    // a complete top-level value was added
	order    []int32 // sorted children of objects, filled by Finish
	keys     keyTable
	rank     []int32 // final (sorted) id of each key
	sorted   []int32 // key ids in name order
	lastWins bool
	err      error
}

// node is one value in the order it was added.
type refNode struct {
	kind  uint8 // refScalar, refObject or refArray
	key   int32 // key id when the node is an object field, else -1
	pos   int   // source offset of the key, for error messages; -1 if none
	start int   // scalar: start in data; object: start of its children in order
	end   int   // scalar: end in data; container: index of the node after its subtree
	count int   // container: number of elements (after duplicate removal)
	size  int   // encoded size, computed by Finish
}

// Reset discards everything added since the last Finish or Reset.
func (b *refBuilder) Reset() {
	b.nodes = b.nodes[:0]
	b.data = b.data[:0]
	b.open = b.open[:0]
	b.order = b.order[:0]
	b.pending = 0
	b.pendPos = -1
	b.rootDone = false
	b.keys.reset()
	b.err = nil
}

func (b *refBuilder) fail(err error) {
	if b.err == nil {
		b.err = err
	}
}

// begin checks that a value may be added here and records its key.
func (b *refBuilder) begin(kind uint8) (*refNode, bool) {
	if b.err != nil {
		return nil, false
	}
	key, pos := int32(-1), -1
	if len(b.open) == 0 {
		if b.rootDone {
			b.fail(fmt.Errorf("variant builder: second top-level value"))
			return nil, false
		}
		if kind == refScalar {
			b.rootDone = true
		}
	} else if b.nodes[b.open[len(b.open)-1]].kind == refObject {
		if b.pending == 0 {
			b.fail(fmt.Errorf("variant builder: object field value without a Key"))
			return nil, false
		}
		key, pos = int32(b.pending-1), b.pendPos
		b.pending = 0
	}
	b.nodes = append(b.nodes, refNode{kind: kind, key: key, pos: pos})
	return &b.nodes[len(b.nodes)-1], true
}

// scalar appends a node for the encoded bytes added to b.data since start.
func (b *refBuilder) scalarFrom(start int) {
	n, ok := b.begin(refScalar)
	if !ok {
		b.data = b.data[:start]
		return
	}
	n.start, n.end = start, len(b.data)
}

func (b *refBuilder) prim(id byte, payload ...byte) {
	start := len(b.data)
	b.data = append(b.data, primitiveHeader(id))
	b.data = append(b.data, payload...)
	b.scalarFrom(start)
}

// stringBytes adds a string already known to be valid UTF-8.
func (b *refBuilder) stringBytes(s []byte) {
	start := len(b.data)
	b.data = appendString(b.data, s)
	b.scalarFrom(start)
}

func (b *refBuilder) beginContainer(kind uint8) {
	if len(b.open) >= MaxDepth {
		b.fail(fmt.Errorf("variant builder: nesting deeper than %d levels", MaxDepth))
		return
	}
	if _, ok := b.begin(kind); ok {
		b.open = append(b.open, len(b.nodes)-1)
	}
}

// key sets the pending key; pos is its source offset for messages.
func (b *refBuilder) key(name []byte, pos int) {
	if b.err != nil {
		return
	}
	if len(b.open) == 0 || b.nodes[b.open[len(b.open)-1]].kind != refObject {
		b.fail(fmt.Errorf("variant builder: Key %q outside an object", name))
		return
	}
	if b.pending != 0 {
		b.fail(fmt.Errorf("variant builder: Key %q after Key without a value", name))
		return
	}
	b.pending = b.keys.intern(name) + 1
	b.pendPos = pos
}

func (b *refBuilder) end(kind uint8) {
	if b.err != nil {
		return
	}
	if len(b.open) == 0 || b.nodes[b.open[len(b.open)-1]].kind != kind {
		b.fail(fmt.Errorf("variant builder: End%s without a matching Begin", kindName(kind == refObject)))
		return
	}
	if b.pending != 0 {
		b.fail(fmt.Errorf("variant builder: object ends after a Key without a value"))
		return
	}
	i := b.open[len(b.open)-1]
	b.open = b.open[:len(b.open)-1]
	b.nodes[i].end = len(b.nodes)
	if len(b.open) == 0 {
		b.rootDone = true
	}
}

// Finish appends the metadata and value of the Variant built since the
// last Reset to the given slices, and resets the Builder.
func (b *refBuilder) Finish(metadata, value []byte) ([]byte, []byte, error) {
	defer b.Reset()
	if b.err != nil {
		return metadata, value, b.err
	}
	if len(b.open) > 0 {
		return metadata, value, fmt.Errorf("variant builder: %d objects or arrays not ended", len(b.open))
	}
	if len(b.nodes) == 0 {
		return metadata, value, fmt.Errorf("variant builder: no value")
	}
	b.sortKeys()
	for i := len(b.nodes) - 1; i >= 0; i-- {
		if err := b.measure(i); err != nil {
			return metadata, value, err
		}
	}
	if b.nodes[0].size > math.MaxUint32 {
		return metadata, value, fmt.Errorf("variant builder: value of %d bytes exceeds 4 GiB", b.nodes[0].size)
	}
	metadata = b.appendMetadata(metadata)
	value = slices.Grow(value, b.nodes[0].size)
	value = b.appendNode(value, 0)
	return metadata, value, nil
}

// sortKeys computes the final id of every key: its rank by name.
func (b *refBuilder) sortKeys() {
	n := len(b.keys.refs)
	b.sorted = b.sorted[:0]
	for i := range n {
		b.sorted = append(b.sorted, int32(i))
	}
	slices.SortFunc(b.sorted, func(x, y int32) int {
		return bytes.Compare(b.keys.name(x), b.keys.name(y))
	})
	b.rank = slices.Grow(b.rank[:0], n)[:n]
	for r, id := range b.sorted {
		b.rank[id] = int32(r)
	}
}

// measure computes the size of node i, whose descendants are measured;
// for objects it also orders the fields and removes duplicates.
func (b *refBuilder) measure(i int) error {
	n := &b.nodes[i]
	switch n.kind {
	case refScalar:
		n.size = n.end - n.start
		return nil
	case refArray:
		count, sum := 0, 0
		for c := i + 1; c < n.end; c = b.next(c) {
			count++
			sum += b.nodes[c].size
		}
		n.count = count
		n.size = refContainerSize(count, 0, sum)
		return nil
	}
	start := len(b.order)
	for c := i + 1; c < n.end; c = b.next(c) {
		b.order = append(b.order, int32(c))
	}
	fields := b.order[start:]
	// Order by name (rank), then by position so that the last of equal
	// names comes last.
	slices.SortFunc(fields, func(x, y int32) int {
		if d := b.rank[b.nodes[x].key] - b.rank[b.nodes[y].key]; d != 0 {
			return int(d)
		}
		return int(x - y)
	})
	out := fields[:0]
	for j, c := range fields {
		if j+1 < len(fields) && b.nodes[fields[j+1]].key == b.nodes[c].key {
			if !b.lastWins {
				dup := b.nodes[fields[j+1]]
				name := b.keys.name(dup.key)
				if dup.pos >= 0 {
					return fmt.Errorf("variant: duplicate key %q at byte %d", name, dup.pos)
				}
				return fmt.Errorf("variant builder: duplicate key %q", name)
			}
			continue
		}
		out = append(out, c)
	}
	b.order = b.order[:start+len(out)]
	sum, maxID := 0, int32(0)
	for _, c := range out {
		sum += b.nodes[c].size
		maxID = max(maxID, b.rank[b.nodes[c].key])
	}
	n.start = start
	n.count = len(out)
	n.size = refContainerSize(len(out), sizeFor(uint64(maxID)), sum)
	return nil
}

// next returns the index of the node after the subtree of node c.
func (b *refBuilder) next(c int) int {
	if b.nodes[c].kind == refScalar {
		return c + 1
	}
	return b.nodes[c].end
}

// containerSize is the encoded size of an object (idSize > 0) or array
// (idSize == 0) of count elements taking sum bytes.
func refContainerSize(count, idSize, sum int) int {
	countSize := 1
	if count > 255 {
		countSize = 4
	}
	return 1 + countSize + count*idSize + (count+1)*sizeFor(uint64(sum)) + sum
}

func (b *refBuilder) appendNode(dst []byte, i int) []byte {
	n := &b.nodes[i]
	switch n.kind {
	case refScalar:
		return append(dst, b.data[n.start:n.end]...)
	case refArray:
		sum := 0
		for c := i + 1; c < n.end; c = b.next(c) {
			sum += b.nodes[c].size
		}
		offSize := sizeFor(uint64(sum))
		dst = appendContainerHeader(dst, basicArray, n.count, 0, offSize)
		off := 0
		for c := i + 1; c < n.end; c = b.next(c) {
			dst = appendUint(dst, uint64(off), offSize)
			off += b.nodes[c].size
		}
		dst = appendUint(dst, uint64(off), offSize)
		for c := i + 1; c < n.end; c = b.next(c) {
			dst = b.appendNode(dst, c)
		}
		return dst
	}
	fields := b.order[n.start : n.start+n.count]
	sum, maxID := 0, int32(0)
	for _, c := range fields {
		sum += b.nodes[c].size
		maxID = max(maxID, b.rank[b.nodes[c].key])
	}
	offSize, idSize := sizeFor(uint64(sum)), sizeFor(uint64(maxID))
	dst = appendContainerHeader(dst, basicObject, n.count, idSize, offSize)
	for _, c := range fields {
		dst = appendUint(dst, uint64(b.rank[b.nodes[c].key]), idSize)
	}
	off := 0
	for _, c := range fields {
		dst = appendUint(dst, uint64(off), offSize)
		off += b.nodes[c].size
	}
	dst = appendUint(dst, uint64(off), offSize)
	for _, c := range fields {
		dst = b.appendNode(dst, int(c))
	}
	return dst
}

// appendMetadata writes the dictionary in name order. An empty dictionary
// is written without sorted_strings, byte for byte as other writers do.
func (b *refBuilder) appendMetadata(dst []byte) []byte {
	n := len(b.sorted)
	total := len(b.keys.arena)
	offSize := sizeFor(uint64(max(n, total)))
	h := byte(1) | byte(offSize-1)<<6
	if n > 0 {
		h |= 1 << 4
	}
	dst = append(dst, h)
	dst = appendUint(dst, uint64(n), offSize)
	off := 0
	for _, id := range b.sorted {
		dst = appendUint(dst, uint64(off), offSize)
		off += len(b.keys.name(id))
	}
	dst = appendUint(dst, uint64(off), offSize)
	for _, id := range b.sorted {
		dst = append(dst, b.keys.name(id)...)
	}
	return dst
}
