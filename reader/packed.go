package reader

import (
	"fmt"
	"math/bits"
	"unsafe"

	"github.com/pqsink/pqsink/meta"
	"github.com/pqsink/pqsink/schema"
)

// packedList holds the elements of a list of scalars, the commonest
// repeated shape (a LIST of strings or numbers, a repeated primitive
// field), in the typed form the pages decoded them to: the values back to
// back and a bitmap of the null elements. A Value per element would cost 72
// bytes and, for a three-level list, a group of one field more, whatever
// the element's size: 30 times the decoded values for a list of short
// strings. Elements become Values only when asked for (Value.Index,
// Value.Elements, Value.List), pointing into vals.
type packedList struct {
	elem  *schema.Node // the leaf: every element's node
	vals  Values       // the non-null elements, in order
	n     int          // elements, null or not
	nulls []uint64     // bit i set: element i is null; nil while none is
	// before holds, per word of nulls, the non-null elements before it;
	// built when the record is finished.
	before []uint32
}

// packedSize is the size of a packedList's header.
const packedSize = int64(unsafe.Sizeof(packedList{}))

// packedValue returns a KindList Value of the node owner whose elements
// are held by pl. The list is kept in the bytes field, which a list does
// not otherwise use, as an empty slice at pl's address: a Value stays 72
// bytes, and the garbage collector keeps pl alive through it.
func packedValue(owner *schema.Node, pl *packedList) Value {
	return Value{kind: KindList, node: owner, bytes: unsafe.Slice((*byte)(unsafe.Pointer(pl)), 0)}
}

// packed returns the packed elements of a list, or nil for a list whose
// elements are Values.
func (v Value) packed() *packedList {
	if v.kind != KindList || v.bytes == nil {
		return nil
	}
	return (*packedList)(unsafe.Pointer(unsafe.SliceData(v.bytes)))
}

// at returns element i.
func (pl *packedList) at(i int) Value {
	if pl.nulls == nil {
		return leafValue(pl.elem, &pl.vals, i)
	}
	w, b := i/64, uint(i%64)
	word := pl.nulls[w]
	if word>>b&1 != 0 {
		return Value{node: pl.elem}
	}
	vi := int(pl.before[w]) + int(b) - bits.OnesCount64(word&(1<<b-1))
	return leafValue(pl.elem, &pl.vals, vi)
}

// decodedSize returns the bytes of the list's values as a page decodes
// them, the measure its cost is held to.
func (pl *packedList) decodedSize() int64 {
	n := pl.vals.Len()
	var data int64
	if pl.vals.Type == meta.TypeByteArray && n > 0 {
		data = int64(pl.vals.Offsets[n])
	}
	return pl.vals.decodedSize(n, data)
}

// heldSize returns the bytes pl's buffers hold.
func (pl *packedList) heldSize() int64 {
	return packedSize + pl.vals.capacity() + 8*int64(cap(pl.nulls)) + 4*int64(cap(pl.before))
}

// packing describes how a leaf's entries are inserted packed, when the
// leaf is the element of a list of scalars.
type packing struct {
	owner   int // index in the leaf's path of the node whose value is the list
	listDef int // definition level from which the list is not null
	elemDef int // definition level from which an entry is an element
}

// packingOf returns how entries of leaf are packed, or nil when its list
// is not one packedList holds: the leaf must be the only repeated node of
// its path (one list per record), below no VARIANT, and the element of a
// LIST of one projected field (three-level or two-level) or a repeated
// primitive field that no LIST or MAP claims. The shapes are those
// finishList and finish turn into a list of the leaf's values.
func packingOf(leaf *plan) *packing {
	n, path := leaf.node, leaf.path
	if n.MaxRep != 1 {
		return nil
	}
	for _, p := range path {
		if p.node.Logical.Kind == schema.Variant {
			return nil
		}
	}
	isList := func(p *plan) bool {
		return p.node.Logical.Kind == schema.List && p.node.ListElement() != nil && len(p.children) == 1
	}
	k := len(path) - 1
	owner := -1
	switch {
	case n.Repetition == schema.Repeated && k == 0:
		owner = k // a repeated top-level field
	case n.Repetition == schema.Repeated:
		parent := path[k-1]
		switch {
		case isList(parent):
			if parent.node.ListElement() != n {
				return nil
			}
			owner = k - 1 // two-level LIST
		case len(parent.children) == 1 && isMap(parent.node):
			return nil
		default:
			owner = k // a repeated field of a group
		}
	case k >= 2:
		rep, list := path[k-1], path[k-2]
		if rep.node.Repetition != schema.Repeated || len(rep.children) != 1 || !isList(list) || list.node.ListElement() != n {
			return nil
		}
		owner = k - 2 // three-level LIST
	default:
		return nil
	}
	pk := &packing{owner: owner}
	d := 0
	for i, p := range path {
		if p.node.Repetition != schema.Required {
			d++
		}
		if i == owner && p.node.Repetition != schema.Repeated {
			pk.listDef = d
		}
		if p.node.Repetition == schema.Repeated {
			pk.elemDef = d
			if i == owner {
				pk.listDef = d - 1
			}
		}
	}
	return pk
}

// extent returns the entries, non-null values and value bytes of the
// record that starts at the cursor's next entry, as far as its current
// page holds it.
func (c *cursor) extent() (entries, values, data int) {
	p := c.page
	if p == nil || c.i >= p.NumValues || p.Rep == nil {
		return 0, 0, 0
	}
	end := c.i + 1
	for end < p.NumValues && p.Rep[end] != 0 {
		end++
	}
	entries = end - c.i
	if p.Def == nil {
		values = entries
	} else {
		maxDef := uint8(c.leaf.node.MaxDef)
		for _, d := range p.Def[c.i:end] {
			if d == maxDef {
				values++
			}
		}
	}
	values = min(values, p.Values.Len()-c.v)
	switch p.Values.Type {
	case meta.TypeByteArray:
		if values > 0 {
			data = int(p.Values.Offsets[c.v+values] - p.Values.Offsets[c.v])
		}
	case meta.TypeFixedLenByteArray:
		data = values * p.Values.Size
	}
	return entries, values, data
}

// packHint is what the current page holds of the record of a packed
// column: the list is sized for it at once.
type packHint struct{ entries, values, data int }

// insertPacked places one entry of a packed leaf into the record: the
// groups above the list as insert creates them, then the list, then, when
// the entry is an element, the element.
func (r *Rows) insertPacked(root *Value, leaf *plan, rep, def uint8, vals *Values, vi int) error {
	pk := leaf.pack
	cur := root
	d := 0
	for _, p := range leaf.path[:pk.owner] {
		slot := &cur.elems[p.index]
		if p.node.Repetition != schema.Required {
			d++
		}
		if int(def) < d {
			return nil // null at this level
		}
		if slot.kind == KindNull {
			var err error
			if *slot, err = r.newGroup(p); err != nil {
				return err
			}
		}
		cur = slot
	}
	if int(def) < pk.listDef {
		return nil // a null list
	}
	owner := leaf.path[pk.owner]
	slot := &cur.elems[owner.index]
	pl := slot.packed()
	if pl == nil {
		if err := r.charge("a record's list", packedSize); err != nil {
			return err
		}
		pl = &packedList{elem: leaf.node, vals: Values{Type: leaf.node.Physical, Size: int(leaf.node.Length)}}
		*slot = packedValue(owner.node, pl)
		if err := r.reservePacked(pl, r.hint); err != nil {
			return err
		}
	}
	if int(def) < pk.elemDef {
		return nil // an empty list
	}
	if rep != 0 && pl.n == 0 {
		return corrupt("column %s: repetition levels skip an element of %s", leaf.node.PathString(), leaf.path[len(leaf.path)-1].node.PathString())
	}
	if int(def) < leaf.node.MaxDef || vi < 0 {
		return r.packNull(pl)
	}
	return r.packValue(pl, vals, vi)
}

// growPacked returns s with room for extra more elements, at least hint
// in all, doubling its capacity when it must grow: the list then holds at
// most twice its values, and has left at most one discarded copy behind.
func growPacked[T any](r *Rows, s []T, extra, hint int) ([]T, error) {
	if len(s)+extra <= cap(s) {
		return s, nil
	}
	var zero T
	size := int64(unsafe.Sizeof(zero))
	old := cap(s)
	c := max(2*old, len(s)+extra, hint, 8)
	if err := r.mem.check("a record's list", int64(c-old)*size); err != nil {
		return s, fmt.Errorf("reader: row group %d, row %d: %d list elements: %w", r.RowGroup(), r.row, len(s), err)
	}
	// Exactly c: slices.Grow would round up by append's rule, up to a
	// quarter more.
	grown := make([]T, len(s), c)
	copy(grown, s)
	return grown, r.charge("a record's list", int64(c-old)*size)
}

// reservePacked sizes a new list for what the page holds of it.
func (r *Rows) reservePacked(pl *packedList, h packHint) error {
	if h.values == 0 {
		return nil
	}
	v := &pl.vals
	var err error
	switch v.Type {
	case meta.TypeBoolean:
		v.Bool, err = growPacked(r, v.Bool, h.values, 0)
	case meta.TypeInt32:
		v.Int32, err = growPacked(r, v.Int32, h.values, 0)
	case meta.TypeInt64:
		v.Int64, err = growPacked(r, v.Int64, h.values, 0)
	case meta.TypeInt96:
		v.Int96, err = growPacked(r, v.Int96, h.values, 0)
	case meta.TypeFloat:
		v.Float, err = growPacked(r, v.Float, h.values, 0)
	case meta.TypeDouble:
		v.Double, err = growPacked(r, v.Double, h.values, 0)
	case meta.TypeByteArray:
		if v.Offsets, err = growPacked(r, v.Offsets, h.values+1, 0); err == nil {
			v.Data, err = growPacked(r, v.Data, h.data, 0)
		}
	case meta.TypeFixedLenByteArray:
		v.Data, err = growPacked(r, v.Data, h.data, 0)
	}
	return err
}

// packNull appends a null element.
func (r *Rows) packNull(pl *packedList) error {
	if pl.nulls == nil {
		// Every element so far was a value: their bits are clear.
		var err error
		if pl.nulls, err = growPacked(r, pl.nulls, pl.n/64+1, (r.hint.entries+63)/64); err != nil {
			return err
		}
		pl.nulls = pl.nulls[:pl.n/64+1]
	}
	if err := r.packBit(pl); err != nil {
		return err
	}
	pl.nulls[pl.n/64] |= 1 << uint(pl.n%64)
	pl.n++
	return nil
}

// packBit makes room in the null bitmap for element pl.n.
func (r *Rows) packBit(pl *packedList) error {
	if pl.nulls == nil || pl.n/64 < len(pl.nulls) {
		return nil
	}
	var err error
	if pl.nulls, err = growPacked(r, pl.nulls, 1, 0); err != nil {
		return err
	}
	pl.nulls = append(pl.nulls, 0)
	return nil
}

// packValue appends value i of vals, a page's values of the list's leaf.
func (r *Rows) packValue(pl *packedList, vals *Values, i int) error {
	if err := r.packBit(pl); err != nil {
		return err
	}
	v := &pl.vals
	var err error
	switch v.Type {
	case meta.TypeBoolean:
		if v.Bool, err = growPacked(r, v.Bool, 1, 0); err == nil {
			v.Bool = append(v.Bool, vals.Bool[i])
		}
	case meta.TypeInt32:
		if v.Int32, err = growPacked(r, v.Int32, 1, 0); err == nil {
			v.Int32 = append(v.Int32, vals.Int32[i])
		}
	case meta.TypeInt64:
		if v.Int64, err = growPacked(r, v.Int64, 1, 0); err == nil {
			v.Int64 = append(v.Int64, vals.Int64[i])
		}
	case meta.TypeInt96:
		if v.Int96, err = growPacked(r, v.Int96, 1, 0); err == nil {
			v.Int96 = append(v.Int96, vals.Int96[i])
		}
	case meta.TypeFloat:
		if v.Float, err = growPacked(r, v.Float, 1, 0); err == nil {
			v.Float = append(v.Float, vals.Float[i])
		}
	case meta.TypeDouble:
		if v.Double, err = growPacked(r, v.Double, 1, 0); err == nil {
			v.Double = append(v.Double, vals.Double[i])
		}
	case meta.TypeByteArray, meta.TypeFixedLenByteArray:
		err = r.packBytes(pl, vals.Bytes(i))
	default:
		err = fmt.Errorf("%w: physical type %v", ErrUnsupported, v.Type)
	}
	if err != nil {
		return err
	}
	pl.n++
	return nil
}

// packBytes appends a byte array or fixed-length value, checking a
// DECIMAL against its precision.
func (r *Rows) packBytes(pl *packedList, b []byte) error {
	n := pl.elem
	if n.Logical.Kind == schema.Decimal {
		if err := checkDecimal(b, n.Logical.Precision); err != nil {
			return fmt.Errorf("reader: row group %d, row %d, column %s: %w: %w", r.RowGroup(), r.row, n.PathString(), ErrCorrupt, err)
		}
	}
	v := &pl.vals
	if int64(len(v.Data))+int64(len(b)) > 1<<32-1 && v.Type == meta.TypeByteArray {
		return fmt.Errorf("reader: row group %d, row %d, column %s: a list of more than 4 GiB of values", r.RowGroup(), r.row, n.PathString())
	}
	var err error
	if v.Data, err = growPacked(r, v.Data, len(b), 0); err != nil {
		return err
	}
	v.Data = append(v.Data, b...)
	if v.Type == meta.TypeByteArray {
		if v.Offsets, err = growPacked(r, v.Offsets, 1+max(0, 1-len(v.Offsets)), 0); err != nil {
			return err
		}
		if len(v.Offsets) == 0 {
			v.Offsets = append(v.Offsets, 0)
		}
		v.Offsets = append(v.Offsets, uint32(len(v.Data)))
	}
	return nil
}

// finishPacked builds the rank of the null bitmap, which finds an
// element's value.
func (r *Rows) finishPacked(pl *packedList) error {
	if pl.nulls == nil || pl.before != nil {
		return nil
	}
	if err := r.charge("a record's list", 4*int64(len(pl.nulls))); err != nil {
		return err
	}
	pl.before = make([]uint32, len(pl.nulls))
	seen := 0
	for w, word := range pl.nulls {
		pl.before[w] = uint32(seen)
		bitsHere := min(64, pl.n-64*w)
		seen += bitsHere - bits.OnesCount64(word)
	}
	return nil
}
