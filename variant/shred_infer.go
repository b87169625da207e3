package variant

import (
	"cmp"
	"fmt"
	"slices"
)

// InferOptions tune Inferrer. The zero value means the defaults.
type InferOptions struct {
	// MinPresence is the share of its parent objects that must carry a
	// field, with a non-null value, for the field to be shredded.
	// Defaults to 0.5.
	MinPresence float64
	// MinTypeShare is the share of a path's non-null values that one
	// shredded type must hold for the path to be shredded as that type.
	// Defaults to 0.9.
	MinTypeShare float64
	// MaxColumns caps the typed_value leaf columns of the inferred shape;
	// when more paths qualify, the fields seen most often win, level by
	// level. Defaults to 256.
	MaxColumns int
	// MaxDepth is the deepest nesting of objects and arrays that is
	// shredded; deeper values stay in value columns. Defaults to 32.
	MaxDepth int
	// MaxFieldNames caps the distinct field names tracked per object
	// path, so that objects used as maps (user ids as keys, say) cannot
	// make inference use memory without bound. Names beyond the cap are
	// not shredded. Defaults to 1000.
	MaxFieldNames int
}

func (o InferOptions) withDefaults() InferOptions {
	if o.MinPresence <= 0 {
		o.MinPresence = 0.5
	}
	if o.MinTypeShare <= 0 {
		o.MinTypeShare = 0.9
	}
	if o.MaxColumns <= 0 {
		o.MaxColumns = 256
	}
	if o.MaxDepth <= 0 {
		o.MaxDepth = 32
	}
	if o.MaxFieldNames <= 0 {
		o.MaxFieldNames = 1000
	}
	return o
}

// Inferrer proposes a shredding Shape from sample values: it counts, for
// every path (object fields at any depth, and the elements of arrays
// taken together), how often each type occurs, and shreds the paths that
// most values carry with one stable type. Integers of any width count as
// one type, shredded as int32 when every sample fits in 32 bits and as
// int64 otherwise; integers and decimals together count as one exact
// numeric type, shredded as a decimal of the scale most of them have
// (integers have scale 0), since a value shreds only into a decimal
// column of its own scale (see Shape.Match): the others stay in value.
// Its precision is that of the physical type that holds the widest of
// the values of that scale (DECIMAL(9,S), (18,S) or (38,S)).
//
// An Inferrer is fed with Add and read with Shape; it allocates a map per
// object path, which is acceptable for the sample it is meant for (the
// first row group of a file), not for every record.
type Inferrer struct {
	opts InferOptions
	root pathStats
}

// pathStats counts what was seen at one path.
type pathStats struct {
	n        int // occurrences, null included
	types    [Array + 1]int
	intWidth Type // widest integer seen
	// Exact numerics (integers at scale 0) by scale: how many, and the
	// most digits left of the point among them.
	scales  [39]int
	intDigs [39]int
	objects int
	fields  map[string]*pathStats
	elem    *pathStats
}

// NewInferrer returns an Inferrer with the given options.
func NewInferrer(opts InferOptions) *Inferrer {
	return &Inferrer{opts: opts.withDefaults()}
}

// Add counts one sample value.
func (in *Inferrer) Add(v Value) error {
	return in.add(&in.root, v, 0)
}

func (in *Inferrer) add(s *pathStats, v Value, depth int) error {
	s.n++
	t := v.Type()
	if t == Invalid {
		return fmt.Errorf("variant: unknown primitive type in sample")
	}
	s.types[t]++
	switch t {
	case Int8, Int16, Int32, Int64:
		s.intWidth = max(s.intWidth, t)
		x, _ := v.Int()
		s.scales[0]++
		s.intDigs[0] = max(s.intDigs[0], DecimalFromInt64(x, 0).Precision())
	case Decimal4, Decimal8, Decimal16:
		d, _ := v.Decimal()
		if d.Scale <= 38 {
			s.scales[d.Scale]++
			s.intDigs[d.Scale] = max(s.intDigs[d.Scale], d.Precision()-int(d.Scale))
		}
	case Object:
		if depth >= in.opts.MaxDepth {
			return nil
		}
		s.objects++
		if s.fields == nil {
			s.fields = make(map[string]*pathStats)
		}
		for i := range v.Len() {
			name, fv, err := v.Field(i)
			if err != nil {
				return err
			}
			f := s.fields[string(name)]
			if f == nil {
				if len(s.fields) >= in.opts.MaxFieldNames {
					continue
				}
				f = &pathStats{}
				s.fields[string(name)] = f
			}
			if err := in.add(f, fv, depth+1); err != nil {
				return err
			}
		}
	case Array:
		if depth >= in.opts.MaxDepth {
			return nil
		}
		if s.elem == nil {
			s.elem = &pathStats{}
		}
		for i := range v.Len() {
			ev, err := v.Index(i)
			if err != nil {
				return err
			}
			if err := in.add(s.elem, ev, depth+1); err != nil {
				return err
			}
		}
	}
	return nil
}

// Shape returns the shape the samples so far suggest; the zero Shape (no
// shredding) when nothing qualifies.
func (in *Inferrer) Shape() Shape {
	budget := in.opts.MaxColumns
	return in.decide(&in.root, &budget)
}

func (in *Inferrer) decide(s *pathStats, budget *int) Shape {
	nonNull := s.n - s.types[Null]
	if nonNull == 0 || *budget <= 0 {
		return Shape{}
	}
	enough := func(count int) bool { return float64(count) >= in.opts.MinTypeShare*float64(nonNull) }
	ints := s.types[Int8] + s.types[Int16] + s.types[Int32] + s.types[Int64]
	decimals := s.types[Decimal4] + s.types[Decimal8] + s.types[Decimal16]
	switch {
	case enough(s.objects) && s.fields != nil:
		return in.decideObject(s, budget)
	case enough(s.types[Array]) && s.elem != nil:
		elem := in.decide(s.elem, budget)
		if !elem.Typed() {
			return Shape{}
		}
		return Shape{Type: Array, Element: &elem}
	case enough(ints):
		*budget--
		if s.intWidth == Int64 {
			return Shape{Type: Int64}
		}
		return Shape{Type: Int32}
	case enough(ints + decimals):
		// The scale most values have: the others, of other scales, stay
		// in value rather than read back rescaled.
		scale := 0
		for sc := range s.scales {
			if s.scales[sc] > s.scales[scale] {
				scale = sc
			}
		}
		p := s.intDigs[scale] + scale
		if p > 38 {
			return Shape{}
		}
		*budget--
		sc := uint8(scale)
		switch {
		case p <= 9:
			return Shape{Type: Decimal4, Precision: 9, Scale: sc}
		case p <= 18:
			return Shape{Type: Decimal8, Precision: 18, Scale: sc}
		}
		return Shape{Type: Decimal16, Precision: 38, Scale: sc}
	}
	for _, t := range [...]Type{Boolean, String, Double, Float, Binary, Date, Timestamp, TimestampNTZ,
		TimestampNanos, TimestampNTZNanos, TimeNTZ, UUID} {
		if enough(s.types[t]) {
			*budget--
			return Shape{Type: t}
		}
	}
	return Shape{}
}

func (in *Inferrer) decideObject(s *pathStats, budget *int) Shape {
	type candidate struct {
		name string
		st   *pathStats
	}
	var cands []candidate
	for name, f := range s.fields {
		if float64(f.n-f.types[Null]) >= in.opts.MinPresence*float64(s.objects) {
			cands = append(cands, candidate{name, f})
		}
	}
	// The most frequent fields get the column budget first; names break
	// ties so that the result does not depend on map order.
	slices.SortFunc(cands, func(a, b candidate) int {
		if c := cmp.Compare(b.st.n, a.st.n); c != 0 {
			return c
		}
		return cmp.Compare(a.name, b.name)
	})
	out := Shape{Type: Object}
	for _, c := range cands {
		fs := in.decide(c.st, budget)
		if fs.Typed() {
			out.Fields = append(out.Fields, ShapeField{Name: c.name, Shape: fs})
		}
	}
	if len(out.Fields) == 0 {
		return Shape{}
	}
	slices.SortFunc(out.Fields, func(a, b ShapeField) int { return cmp.Compare(a.Name, b.Name) })
	return out
}
