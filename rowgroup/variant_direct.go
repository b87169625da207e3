package rowgroup

import (
	"errors"
	"io"
	"math"

	"github.com/pqsink/pqsink/internal/jsonscan"
	"github.com/pqsink/pqsink/variant"
)

// The direct path of VariantShredder: with a shredding shape, a JSON
// record is shredded straight from its tokens into the typed columns,
// without first encoding it as a Variant and reading that back. Only the
// metadata (the record's field names, sorted) and the value bytes of what
// does not fit the shape are built.
//
// It handles the records that fit the shape, which is what a shape is
// for: every object of an object shape has only shredded fields, once
// each, and values that do not fit their typed_value hold no object (their
// Variant bytes then do not depend on the record's dictionary, which is
// known only at its end). Anything else — a field beyond the shape, a
// non-fitting object, a duplicate name, a number no Variant type holds
// exactly, a syntax error — makes the direct path give up: what it
// appended is taken back and the record goes through the two-pass path
// (Encoder.AppendJSON, then write), which stays the reference, so both
// paths give the same columns and the same errors.

// directState is the direct path's scratch, kept between records.
type directState struct {
	scan   jsonscan.Scanner
	json   []byte // the record
	dict   variant.Dictionary
	enc    *variant.Encoder // non-fitting arrays, with default options
	num    []byte           // a scalar's Variant bytes
	md     []byte           // enc's metadata
	val    []byte           // enc's value
	meta   []byte           // the record's metadata
	serial uint32           // objects seen, to tell a field's first time

	// A huge record's columns are grown by extrapolation (growRecord)
	// when the scanner passes growAt; grown says that they were.
	growAt int
	grown  bool

	// Give up on the direct path for a while when most records do not
	// fit it, so that data the shape does not describe costs one path.
	tries, misses int
	pause         int  // records left to send to the two-pass path
	noPause       bool // tests: always try the direct path
}

// directPlan is the direct path's state of an object pair.
type directPlan struct {
	names  []jsonscan.MemberName // shape field names, for Scanner.NextIs
	ids    []int32               // dictionary ids of the names
	idGen  uint32                // 1 + the dictionary generation of ids; 0 for none
	seen   []uint32              // serial of the object a field was last seen in
	follow []int                 // field index expected after field i; follow[len] is the first
}

const (
	directWindow   = 1024 // records between looks at the miss rate
	directPauseFor = 16 * directWindow

	// A record of growFrom bytes or more has its columns grown by
	// extrapolation, growSteps times as it is shredded.
	growFrom  = 1 << 20
	growSteps = 16
)

// tryDirect shreds json by the direct path, without ending the row. It
// reports false, with the row group as before, when the record needs the
// two-pass path.
func (s *VariantShredder) tryDirect(json []byte) bool {
	d := s.direct
	if d.pause > 0 {
		d.pause--
		return false
	}
	d.tries++
	s.undo.begin(s.g)
	ok := s.directRecord(json)
	if !ok {
		s.undo.rollback(s.g)
		d.misses++
	}
	if d.tries == directWindow {
		if d.misses > directWindow/4 && !d.noPause {
			d.pause = directPauseFor
		}
		d.tries, d.misses = 0, 0
	}
	return ok
}

func (s *VariantShredder) directRecord(json []byte) bool {
	d := s.direct
	d.json = json
	d.scan.Reset(json)
	d.dict.Reset()
	d.growAt = math.MaxInt
	if len(json) >= growFrom {
		d.growAt = len(json) / growSteps
	}
	k, err := d.scan.Next()
	if err != nil || !s.directValue(s.root, k, 0) {
		return false
	}
	if _, err := d.scan.Next(); !errors.Is(err, io.EOF) {
		return false
	}
	d.meta = d.dict.Append(d.meta[:0])
	s.metadata.AppendBytes(0, d.meta)
	return true
}

// directValue shreds the value whose first token k was just read into the
// pair p, as write does with its Variant.
func (s *VariantShredder) directValue(p *variantPlan, k jsonscan.Kind, rep uint8) bool {
	d := s.direct
	switch k {
	case jsonscan.BeginObject:
		if p.shape.Type == variant.Object {
			return s.directObject(p, rep)
		}
		return false // its Variant refers to the record's dictionary
	case jsonscan.BeginArray:
		if p.shape.Type == variant.Array {
			return s.directArray(p, rep)
		}
		return s.directOther(p, rep)
	case jsonscan.String:
		if p.shape.Type == variant.String {
			if p.value != nil {
				p.value.Null(rep, p.def)
			}
			p.typed.AppendBytes(rep, d.scan.Bytes())
			return true
		}
		d.num = variant.AppendString(d.num[:0], d.scan.Bytes())
	case jsonscan.True, jsonscan.False:
		if p.shape.Type == variant.Boolean {
			if p.value != nil {
				p.value.Null(rep, p.def)
			}
			p.typed.AppendBool(rep, k == jsonscan.True)
			return true
		}
		d.num = append(d.num[:0], boolHeader(k == jsonscan.True))
	case jsonscan.Null:
		d.num = append(d.num[:0], 0) // the Variant null
	case jsonscan.Number:
		var err error
		d.num, err = variant.AppendNumber(d.num[:0], d.scan.Bytes(), false)
		if err != nil {
			return false
		}
		if p.shape.Typed() {
			v, err := variant.NewWithMetadata(variant.Metadata{}, d.num)
			if err != nil {
				return false
			}
			// For a primitive shape, ScalarOf accepts exactly what Match
			// does; for the others it accepts nothing.
			if sc, ok := p.shape.ScalarOf(v); ok {
				if p.value != nil {
					p.value.Null(rep, p.def)
				}
				p.appendScalar(rep, &sc)
				return true
			}
		}
	default:
		return false
	}
	// A scalar that does not fit: its Variant goes to value.
	if p.value == nil {
		return false
	}
	p.value.AppendBytes(rep, d.num)
	p.nullTyped(rep, p.def)
	return true
}

// boolHeader is the Variant byte of a boolean.
func boolHeader(v bool) byte {
	if v {
		return 1 << 2 // primitive true
	}
	return 2 << 2 // primitive false
}

// directOther writes an array that does not fit p to p's value column,
// when it holds no object.
func (s *VariantShredder) directOther(p *variantPlan, rep uint8) bool {
	d := s.direct
	if p.value == nil {
		return false
	}
	start := d.scan.Offset()
	if d.scan.Skip() != nil {
		return false
	}
	raw := d.json[start : d.scan.Offset()+1] // through the closing bracket
	var err error
	d.md, d.val, err = d.enc.AppendJSON(d.md[:0], d.val[:0], raw)
	if err != nil || !emptyMetadata(d.md) {
		return false
	}
	p.value.AppendBytes(rep, d.val)
	p.nullTyped(rep, p.def)
	return true
}

// emptyMetadata reports whether md is the metadata of a Variant without
// field names, as the Encoder writes it.
func emptyMetadata(md []byte) bool { return len(md) == 3 && md[1] == 0 }

func (s *VariantShredder) directArray(p *variantPlan, rep uint8) bool {
	d := s.direct
	if p.value != nil {
		p.value.Null(rep, p.def)
	}
	n := 0
	for {
		k, err := d.scan.Next()
		if err != nil {
			return false
		}
		if k == jsonscan.EndArray {
			break
		}
		if !s.directValue(p.elem, k, rep) {
			return false
		}
		rep = p.rep
		n++
		if d.scan.Offset() >= d.growAt {
			s.growRecord()
		}
	}
	if n == 0 {
		p.elem.nulls(rep, p.def+1)
	}
	return true
}

func (s *VariantShredder) directObject(p *variantPlan, rep uint8) bool {
	d := s.direct
	dp := p.direct
	nf := len(p.fields)
	if dp.idGen != d.dict.Generation()+1 {
		for i := range p.shape.Fields {
			dp.ids[i] = d.dict.Intern([]byte(p.shape.Fields[i].Name))
		}
		dp.idGen = d.dict.Generation() + 1
	}
	d.serial++
	serial := d.serial
	next := dp.follow[nf]
	prev := nf
	for {
		j := -1
		if next < nf && d.scan.NextIs(&dp.names[next]) {
			j = next
		} else {
			k, err := d.scan.Next()
			if err != nil {
				return false
			}
			if k == jsonscan.EndObject {
				break
			}
			j = p.shape.FieldIndex(d.scan.Bytes())
			if j < 0 {
				return false // a field beyond the shape: a residual object
			}
		}
		if dp.seen[j] == serial {
			return false // a repeated name
		}
		dp.seen[j] = serial
		d.dict.Use(dp.ids[j])
		dp.follow[prev] = j
		prev = j
		next = dp.follow[j]
		k, err := d.scan.Next()
		if err != nil || !s.directValue(p.fields[j], k, rep) {
			return false
		}
		if d.scan.Offset() >= d.growAt {
			s.growRecord()
		}
	}
	if p.value != nil {
		p.value.Null(rep, p.def)
	}
	for j, f := range p.fields {
		if dp.seen[j] != serial {
			f.nulls(rep, p.def+1)
		}
	}
	return true
}

// growRecord grows the columns of a huge record, part of which is
// shredded, for the whole of it: the part the scanner has passed says what
// the rest will add, if the record is alike throughout, as one of many
// small values is. Such a record grows its levels and values by a few
// bytes for every byte of JSON; without this they grow by append, each
// step a copy with the old buffer still held, and end up to a quarter too
// large. Only the columns of lists (repeated) can take more than a slot
// per record, and their lengths at its start are in the undo marks.
func (s *VariantShredder) growRecord() {
	d := s.direct
	off := d.scan.Offset()
	d.growAt = off + len(d.json)/growSteps
	f := float64(len(d.json)) / float64(max(off, 1))
	for i, c := range s.undo.repeated {
		c.extrapolate(s.undo.marks[i], f)
	}
	d.grown = true
}

// trimRecord ends a huge record: it lets go of the room growRecord
// reserved and the record did not use, and keeps the repetition levels
// that leaves under the same list share once.
func (s *VariantShredder) trimRecord() {
	for _, c := range s.undo.repeated {
		c.trim()
	}
	for _, g := range s.repGroups {
		for _, c := range g[1:] {
			c.shareRep(g[0])
		}
	}
	s.direct.grown = false
}

// newDirectPlan prepares the direct path's state of an object pair.
func newDirectPlan(shape *variant.Shape) *directPlan {
	n := len(shape.Fields)
	dp := &directPlan{
		names:  make([]jsonscan.MemberName, n),
		ids:    make([]int32, n),
		seen:   make([]uint32, n),
		follow: make([]int, n+1),
	}
	for i := range shape.Fields {
		dp.names[i] = jsonscan.NewMemberName(shape.Fields[i].Name)
		dp.follow[i] = n
	}
	dp.follow[n] = 0
	return dp
}
