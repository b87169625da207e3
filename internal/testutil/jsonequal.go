package testutil

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/big"
)

// JSONEqual reports whether JSON texts a and b hold the same value:
// objects whatever the order of their members, arrays element by element,
// numbers by exact decimal value (1.5, 1.50 and 15e-1 are equal, 0.1 and
// 0.10000000000000001 are not). The error says which text does not
// decode.
func JSONEqual(a, b []byte) (bool, error) {
	return JSONEqualFunc(a, b, ExactNumbers)
}

// JSONEqualFunc is JSONEqual with numbers compared by sameNumber, given
// the literal of a and the literal of b.
func JSONEqualFunc(a, b []byte, sameNumber func(a, b json.Number) bool) (bool, error) {
	x, err := decodeJSON(a)
	if err != nil {
		return false, err
	}
	y, err := decodeJSON(b)
	if err != nil {
		return false, err
	}
	return sameValue(x, y, sameNumber), nil
}

// ExactNumbers reports whether two number literals have the same exact
// decimal value.
func ExactNumbers(a, b json.Number) bool {
	x, ok1 := new(big.Rat).SetString(string(a))
	y, ok2 := new(big.Rat).SetString(string(b))
	return ok1 && ok2 && x.Cmp(y) == 0
}

// DoubleNumbers reports whether two number literals read as the same
// double, as encoding/json reads them into an any: 2 and 2.0 are equal,
// and so are 0.1 and 0.10000000000000001. A literal beyond a double's range
// is equal to nothing.
func DoubleNumbers(a, b json.Number) bool {
	x, err1 := a.Float64()
	y, err2 := b.Float64()
	return err1 == nil && err2 == nil && x == y
}

// decodeJSON decodes one JSON value, numbers kept as their literals.
func decodeJSON(text []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(text))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, fmt.Errorf("decode %.200s: %w", text, err)
	}
	return v, nil
}

func sameValue(x, y any, sameNumber func(a, b json.Number) bool) bool {
	switch x := x.(type) {
	case map[string]any:
		y, ok := y.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			if w, ok := y[k]; !ok || !sameValue(v, w, sameNumber) {
				return false
			}
		}
		return true
	case []any:
		y, ok := y.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !sameValue(x[i], y[i], sameNumber) {
				return false
			}
		}
		return true
	case json.Number:
		y, ok := y.(json.Number)
		return ok && sameNumber(x, y)
	}
	return x == y
}
