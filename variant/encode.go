package variant

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"math/bits"
	"strconv"

	"github.com/pqsink/pqsink/internal/jsonscan"
)

// Option configures an Encoder.
type Option func(*options)

type options struct {
	lastWins bool
	lossy    bool
}

// LastKeyWins makes an object with a repeated field name keep the last
// value, as most JSON parsers do. By default a repeated name is an error,
// because the Variant spec forbids duplicate names and silently dropping
// data would hide a producer bug.
func LastKeyWins() Option { return func(o *options) { o.lastWins = true } }

// LossyNumbers lets a JSON number that no Variant type holds exactly (an
// integer of more than 38 digits, a literal of more digits than a decimal
// keeps, or one that underflows a double, such as 1e-400) become the
// nearest double. By default such a number is an error, so that data is
// never changed without a word.
func LossyNumbers() Option { return func(o *options) { o.lossy = true } }

// Encoder converts JSON documents to Variants. It keeps its buffers
// between calls, so encoding one record after another does not allocate
// once the buffers fit the largest record. An Encoder must not be used by
// several goroutines at once.
type Encoder struct {
	scan  jsonscan.Scanner
	b     Builder
	lossy bool
}

// NewEncoder returns an Encoder with the given options.
func NewEncoder(opts ...Option) *Encoder {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	e := &Encoder{lossy: o.lossy}
	e.b.lastWins = o.lastWins
	e.scan.SetMaxDepth(MaxDepth)
	return e
}

// FromJSON converts one JSON document to a Variant with a fresh Encoder.
func FromJSON(json []byte) (metadata, value []byte, err error) {
	return NewEncoder().AppendJSON(nil, nil, json)
}

// AppendJSON converts the JSON document json (one value, surrounded by
// optional whitespace) in a single pass and appends its Variant metadata
// and value to the given slices. Errors name the byte offset in json.
func (e *Encoder) AppendJSON(metadata, value, json []byte) ([]byte, []byte, error) {
	e.b.Reset()
	e.scan.Reset(json)
	b := &e.b
	b.buildIn(value)
	if err := e.tokens(); err != nil {
		b.Reset()
		return metadata, value, err
	}
	return b.Finish(metadata, value)
}

// tokens feeds the document's tokens to the Builder.
func (e *Encoder) tokens() error {
	b := &e.b
	for {
		k, err := e.scan.Next()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return fmt.Errorf("variant: %w", err)
		}
		switch k {
		case jsonscan.Null:
			b.Null()
		case jsonscan.True:
			b.Bool(true)
		case jsonscan.False:
			b.Bool(false)
		case jsonscan.String:
			b.stringBytes(e.scan.Bytes())
		case jsonscan.Number:
			start := len(b.data)
			var err error
			b.data, err = appendNumber(b.data, e.scan.Bytes(), e.lossy)
			if err != nil {
				lit := e.scan.Bytes()
				if len(lit) > 40 {
					return fmt.Errorf("variant: number %s… (%d digits) at byte %d: %w", lit[:40], len(lit), e.scan.Offset(), err)
				}
				return fmt.Errorf("variant: number %s at byte %d: %w", lit, e.scan.Offset(), err)
			}
			b.scalarFrom(start)
		case jsonscan.Key:
			b.key(e.scan.Bytes(), e.scan.Offset())
		case jsonscan.BeginObject:
			b.BeginObject()
		case jsonscan.EndObject:
			b.EndObject()
		case jsonscan.BeginArray:
			b.BeginArray()
		case jsonscan.EndArray:
			b.EndArray()
		}
	}
}

// AppendNumber appends the Variant encoding of the JSON number literal lit
// to dst, as Encoder.AppendJSON encodes numbers (see the package
// documentation); lossy is the LossyNumbers option. lit must be a number
// literal that the JSON scanner accepted: it is not checked again.
func AppendNumber(dst, lit []byte, lossy bool) ([]byte, error) {
	return appendNumber(dst, lit, lossy)
}

// AppendString appends the Variant encoding of the string s, which must be
// valid UTF-8, to dst: the short string encoding below 64 bytes, as the
// Encoder and the Builder write strings.
func AppendString(dst, s []byte) []byte { return appendString(dst, s) }

// maxDecimalDigits is the most digits a decimal16 holds.
const maxDecimalDigits = 38

// ErrInexactNumber is wrapped by the error for a JSON number that no
// Variant type holds exactly, unless LossyNumbers is given.
var ErrInexactNumber = errors.New("no Variant type holds this number exactly (a double would change it; LossyNumbers, or pqsink convert --variant-lossy-numbers, allows the nearest double)")

// appendNumber encodes the JSON number literal lit (already checked by
// the scanner) following the rules in the package documentation; lossy
// allows the nearest double for a number nothing holds exactly.
func appendNumber(dst, lit []byte, lossy bool) ([]byte, error) {
	i := 0
	neg := lit[0] == '-'
	if neg {
		i++
	}
	// Accumulate the significant digits of the integer and fraction parts
	// into a 128-bit magnitude, until there are too many for a decimal.
	var hi, lo uint64
	digits := 0 // significant digits accumulated (leading zeros skipped)
	tooMany := false
	fracDigits := 0
	isInt := true
	inFrac := false
	for ; i < len(lit); i++ {
		c := lit[i]
		if c == '.' {
			inFrac = true
			isInt = false
			continue
		}
		if c == 'e' || c == 'E' {
			isInt = false
			break
		}
		if inFrac {
			fracDigits++
		}
		if digits == 0 && c == '0' {
			continue
		}
		digits++
		if digits > maxDecimalDigits {
			tooMany = true
			continue
		}
		hi, lo = mulAdd10(hi, lo, uint64(c-'0'))
	}
	exp := 0
	if i < len(lit) { // exponent
		i++
		expNeg := false
		if lit[i] == '+' || lit[i] == '-' {
			expNeg = lit[i] == '-'
			i++
		}
		for ; i < len(lit); i++ {
			if exp < 100_000 { // saturate: anything this large is not a decimal
				exp = exp*10 + int(lit[i]-'0')
			}
		}
		if expNeg {
			exp = -exp
		}
	}
	if neg && digits == 0 && !isInt {
		// Negative zero: only a double keeps the sign. (An integer has
		// none: -0 is 0.)
		dst = append(dst, primitiveHeader(primDouble))
		return binary.LittleEndian.AppendUint64(dst, math.Float64bits(math.Copysign(0, -1))), nil
	}
	if isInt && !tooMany && hi == 0 && (lo <= math.MaxInt64 || neg && lo == 1<<63) {
		v := int64(lo)
		if neg {
			v = -v
		}
		return appendInt(dst, v), nil
	}
	scale := fracDigits - exp
	if !tooMany && scale < 0 {
		// A positive exponent beyond the fraction: fold it into the
		// unscaled value while it stays within 38 digits.
		if digits == 0 {
			scale = 0
		}
		for ; scale < 0 && digits > 0; scale++ {
			digits++
			if digits > maxDecimalDigits {
				tooMany = true
				break
			}
			hi, lo = mulAdd10(hi, lo, 0)
		}
	}
	if !tooMany && scale <= 38 {
		d := Decimal{Hi: int64(hi), Lo: lo, Scale: uint8(scale)}
		if neg {
			d = d.neg()
		}
		// The narrowest type whose precision holds the scale too: a
		// decimal4 of scale 12 is valid Variant, but it is a DECIMAL(9,12)
		// to a reader that maps it to its decimal type, and DuckDB 1.5
		// dies of SIGFPE reading a decimal8 of scale 19 or more.
		switch p := max(digits, scale); {
		case p <= 9:
			dst = append(dst, primitiveHeader(primDecimal4), d.Scale)
			return binary.LittleEndian.AppendUint32(dst, uint32(d.Lo)), nil
		case p <= 18:
			dst = append(dst, primitiveHeader(primDecimal8), d.Scale)
			return binary.LittleEndian.AppendUint64(dst, d.Lo), nil
		default:
			dst = append(dst, primitiveHeader(primDecimal16), d.Scale)
			dst = binary.LittleEndian.AppendUint64(dst, d.Lo)
			return binary.LittleEndian.AppendUint64(dst, uint64(d.Hi)), nil
		}
	}
	f, err := strconv.ParseFloat(string(lit), 64)
	if err != nil && math.IsInf(f, 0) {
		return dst, fmt.Errorf("out of the range of a double")
	}
	if !lossy {
		// Written out in full, more digits than a decimal keeps: the
		// producer meant every one of them.
		plain := !bytes.ContainsAny(lit, "eE")
		// Below the smallest normal double, digits are lost, down to 0;
		// a subnormal written as its shortest form (5e-324, as Go and
		// JavaScript print it) loses nothing the producer had.
		under := digits > 0 && jsonscan.Underflows(lit, f, 64)
		if (tooMany && plain) || under {
			return dst, ErrInexactNumber
		}
	}
	dst = append(dst, primitiveHeader(primDouble))
	return binary.LittleEndian.AppendUint64(dst, math.Float64bits(f)), nil
}

// mulAdd10 returns hi:lo × 10 + d; the caller keeps it below 10^38.
func mulAdd10(hi, lo, d uint64) (uint64, uint64) {
	h, l := bits.Mul64(lo, 10)
	l, carry := bits.Add64(l, d, 0)
	return hi*10 + h + carry, l
}

func appendInt(dst []byte, v int64) []byte {
	switch {
	case v == int64(int8(v)):
		return append(dst, primitiveHeader(primInt8), byte(v))
	case v == int64(int16(v)):
		return append(dst, primitiveHeader(primInt16), byte(v), byte(v>>8))
	case v == int64(int32(v)):
		dst = append(dst, primitiveHeader(primInt32))
		return binary.LittleEndian.AppendUint32(dst, uint32(v))
	}
	dst = append(dst, primitiveHeader(primInt64))
	return binary.LittleEndian.AppendUint64(dst, uint64(v))
}
