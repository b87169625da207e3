package schema

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"slices"

	"github.com/pqsink/pqsink/meta"
)

// validate checks one node, whose children are already built, against the
// rules of LogicalTypes.md. Errors do not name the node; the caller does.
func (b *builder) validate(n *Node) error {
	if n.group {
		return b.validateGroup(n)
	}
	return validateLeaf(n)
}

func validateLeaf(n *Node) error {
	if n.Physical < meta.TypeBoolean || n.Physical > meta.TypeFixedLenByteArray {
		return fmt.Errorf("invalid physical type %d", n.Physical)
	}
	if n.Physical == meta.TypeFixedLenByteArray {
		if n.Length <= 0 {
			return fmt.Errorf("FIXED_LEN_BYTE_ARRAY needs a positive length, not %d", n.Length)
		}
	} else if n.Length != 0 {
		return fmt.Errorf("length %d given for %s; only FIXED_LEN_BYTE_ARRAY has one", n.Length, n.Physical.String())
	}
	if n.HasLegacy {
		return fmt.Errorf("%s annotates a group, not a leaf", convertedName(n.Legacy))
	}
	l := n.Logical
	switch l.Kind {
	case None, Unknown:
		return nil
	case String, Enum, JSON, BSON:
		return wantPhysical(n, meta.TypeByteArray)
	case Geometry:
		if l.Algorithm != "" {
			return errors.New("GEOMETRY has no edge algorithm; only GEOGRAPHY does")
		}
		return wantPhysical(n, meta.TypeByteArray)
	case Geography:
		if l.Algorithm != "" && !slices.Contains(geographyAlgorithms, l.Algorithm) {
			return fmt.Errorf("GEOGRAPHY edge algorithm %q is none of %v", l.Algorithm, geographyAlgorithms)
		}
		return wantPhysical(n, meta.TypeByteArray)
	case UUID:
		return wantFixed(n, 16)
	case Float16:
		return wantFixed(n, 2)
	case Interval:
		return wantFixed(n, 12)
	case Date:
		return wantPhysical(n, meta.TypeInt32)
	case Int:
		switch l.BitWidth {
		case 8, 16, 32:
			return wantPhysical(n, meta.TypeInt32)
		case 64:
			return wantPhysical(n, meta.TypeInt64)
		}
		return fmt.Errorf("%s: bit width must be 8, 16, 32 or 64", l)
	case Time:
		switch l.Unit {
		case Millis:
			return wantPhysical(n, meta.TypeInt32)
		case Micros, Nanos:
			return wantPhysical(n, meta.TypeInt64)
		}
		return fmt.Errorf("TIME needs a unit: MILLIS, MICROS or NANOS")
	case Timestamp:
		if l.Unit < Millis || l.Unit > Nanos {
			return fmt.Errorf("TIMESTAMP needs a unit: MILLIS, MICROS or NANOS")
		}
		return wantPhysical(n, meta.TypeInt64)
	case Decimal:
		return validateDecimal(n)
	case List, Map, Variant, File:
		return fmt.Errorf("%s annotates a group, not a leaf", l.Kind)
	}
	return fmt.Errorf("unknown logical kind %d", l.Kind)
}

func wantPhysical(n *Node, t meta.Type) error {
	if n.Physical != t {
		return fmt.Errorf("%s must annotate %s, not %s", n.Logical, t.String(), n.Physical.String())
	}
	return nil
}

func wantFixed(n *Node, length int32) error {
	if n.Physical != meta.TypeFixedLenByteArray || n.Length != length {
		return fmt.Errorf("%s must annotate FIXED_LEN_BYTE_ARRAY(%d), not %s", n.Logical, length, n.TypeName())
	}
	return nil
}

func validateDecimal(n *Node) error {
	l := n.Logical
	if l.Precision < 1 {
		return fmt.Errorf("%s: precision must be at least 1", l)
	}
	if l.Scale < 0 || l.Scale > l.Precision {
		return fmt.Errorf("%s: scale must be between 0 and the precision", l)
	}
	var most int32
	switch n.Physical {
	case meta.TypeInt32:
		most = 9
	case meta.TypeInt64:
		most = 18
	case meta.TypeByteArray:
		return nil
	case meta.TypeFixedLenByteArray:
		if !decimalFits(l.Precision, n.Length) {
			return fmt.Errorf("%s: precision too large for FIXED_LEN_BYTE_ARRAY(%d)", l, n.Length)
		}
		return nil
	default:
		return fmt.Errorf("DECIMAL must annotate INT32, INT64, FIXED_LEN_BYTE_ARRAY or BYTE_ARRAY, not %s", n.Physical.String())
	}
	if l.Precision > most {
		return fmt.Errorf("%s: precision of %s is at most %d", l, n.Physical.String(), most)
	}
	return nil
}

// decimalFits reports whether length bytes of two's complement hold every
// integer of precision decimal digits: 10^precision <= 2^(8*length-1) - 1,
// which, as no power of ten is a power of two, is 10^precision < 2^(8*length-1).
func decimalFits(precision, length int32) bool {
	bits := 8*float64(length) - 1
	need := float64(precision) * math.Log2(10)
	// Far from the boundary the float answer is certainly right; near it,
	// and only for sizes where that is cheap, decide exactly.
	if need < bits-1 {
		return true
	}
	if need > bits+1 || precision > 4096 {
		return need < bits
	}
	pow10 := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(precision)), nil)
	return pow10.BitLen() <= int(bits) // pow10 < 2^bits
}

func (b *builder) validateGroup(n *Node) error {
	if len(n.Fields) == 0 {
		return errors.New("group has no fields")
	}
	if n.HasLegacy {
		if n.Legacy != meta.ConvertedMapKeyValue {
			return fmt.Errorf("legacy annotation %s has a logical type; set Logical instead", convertedName(n.Legacy))
		}
		if n.Logical.Kind != None {
			return fmt.Errorf("both %s and %s given", n.Logical, convertedName(n.Legacy))
		}
		// MAP_KEY_VALUE on the repeated group of a MAP is how old writers
		// marked it; elsewhere it stands for MAP and must have its shape.
		if n.parent != nil && n.parent.Logical.Kind == Map {
			return nil
		}
		return checkMap(n, false)
	}
	switch n.Logical.Kind {
	case None:
		return nil
	case List:
		return b.checkList(n)
	case Map:
		return checkMap(n, b.strict)
	case Variant:
		return b.checkVariant(n)
	case File:
		return checkFile(n)
	}
	return fmt.Errorf("%s annotates a leaf, not a group", n.Logical)
}

func (b *builder) checkList(n *Node) error {
	if len(n.Fields) != 1 || n.Fields[0].Repetition != Repeated {
		return errors.New("LIST must contain exactly one field, a repeated one")
	}
	if !b.strict {
		return nil // any of the two-level shapes of the backward-compatibility rules
	}
	if n.Repetition == Repeated {
		return errors.New("LIST must be required or optional, not repeated")
	}
	rep := n.Fields[0]
	if !rep.group || rep.Name != "list" || len(rep.Fields) != 1 || rep.Fields[0].Name != "element" {
		return errors.New(`LIST must contain "repeated group list" holding one field "element"`)
	}
	if rep.Fields[0].Repetition == Repeated {
		return errors.New("LIST element must be required or optional, not repeated")
	}
	return nil
}

func checkMap(n *Node, strict bool) error {
	what := n.Logical.Kind.String()
	if n.HasLegacy {
		what = convertedName(n.Legacy)
	}
	if len(n.Fields) != 1 {
		return fmt.Errorf("%s must contain exactly one field, the repeated key-value group", what)
	}
	kv := n.Fields[0]
	if !kv.group || kv.Repetition != Repeated || len(kv.Fields) > 2 {
		return fmt.Errorf("%s must contain one repeated group of a key and an optional value", what)
	}
	if !strict {
		return nil // names and key repetition vary in old files
	}
	if n.Repetition == Repeated {
		return fmt.Errorf("%s must be required or optional, not repeated", what)
	}
	if kv.Name != "key_value" {
		return fmt.Errorf("%s must contain a repeated group named \"key_value\", not %q", what, kv.Name)
	}
	if kv.Fields[0].Name != "key" || kv.Fields[0].Repetition != Required {
		return fmt.Errorf("%s key_value must start with a required field \"key\"", what)
	}
	if len(kv.Fields) == 2 && (kv.Fields[1].Name != "value" || kv.Fields[1].Repetition == Repeated) {
		return fmt.Errorf("%s key_value's second field must be a required or optional \"value\"", what)
	}
	return nil
}

func (b *builder) checkVariant(n *Node) error {
	if n.Logical.SpecVersion < 1 {
		return fmt.Errorf("VARIANT specification version %d is not positive", n.Logical.SpecVersion)
	}
	var metadata, value, typed *Node
	for _, f := range n.Fields {
		switch f.Name {
		case "metadata":
			metadata = f
		case "value":
			value = f
		case "typed_value":
			typed = f
		default:
			return fmt.Errorf("VARIANT has an unexpected field %q; only metadata, value and typed_value belong", f.Name)
		}
	}
	if metadata == nil || metadata.group || metadata.Physical != meta.TypeByteArray || metadata.Repetition != Required {
		return errors.New("VARIANT needs a field \"required binary metadata\"")
	}
	if value == nil {
		if typed == nil || b.strict {
			return errors.New("VARIANT needs a binary field \"value\"")
		}
		return nil
	}
	if value.group || value.Physical != meta.TypeByteArray || value.Repetition == Repeated {
		return errors.New("VARIANT field \"value\" must be a required or optional binary")
	}
	if value.Repetition == Optional && typed == nil {
		return errors.New("VARIANT field \"value\" may be optional only beside a typed_value")
	}
	if typed != nil && typed.Repetition != Optional {
		return errors.New("VARIANT field \"typed_value\" must be optional")
	}
	return nil
}

// fileFields are the fields a FILE group may define, with their types.
var fileFields = map[string]struct {
	physical meta.Type
	str      bool // annotated STRING
}{
	"uri":          {meta.TypeByteArray, true},
	"offset":       {meta.TypeInt64, false},
	"size":         {meta.TypeInt64, false},
	"content_type": {meta.TypeByteArray, true},
	"checksum":     {meta.TypeByteArray, true},
	"inline":       {meta.TypeByteArray, false},
}

func checkFile(n *Node) error {
	for _, f := range n.Fields {
		want, ok := fileFields[f.Name]
		if !ok {
			return fmt.Errorf("FILE has an unexpected field %q; only uri, offset, size, content_type, checksum and inline belong", f.Name)
		}
		kind := None
		if want.str {
			kind = String
		}
		if f.group || f.Repetition != Optional || f.Physical != want.physical || f.Logical.Kind != kind {
			decl := "optional " + physicalWords[want.physical] + " " + f.Name
			if want.str {
				decl += " (STRING)"
			}
			return fmt.Errorf("FILE field %q must be %q", f.Name, decl)
		}
	}
	return nil
}

// TypeName returns a leaf's physical type as parquet.thrift names it, with
// the length of a FIXED_LEN_BYTE_ARRAY: "INT64", "FIXED_LEN_BYTE_ARRAY(16)".
func (n *Node) TypeName() string {
	if n.Physical == meta.TypeFixedLenByteArray {
		return fmt.Sprintf("FIXED_LEN_BYTE_ARRAY(%d)", n.Length)
	}
	return n.Physical.String()
}
