package jsonschema

import (
	"encoding/json"
	"errors"
	"io"

	"github.com/pqsink/pqsink/internal/jsonscan"
)

// decoder turns one JSON text into the values the validator walks
// (map[string]any, []any, string, json.Number, bool, nil) with the strict
// tokenizer the JSON shredder uses: about twice as fast as encoding/json,
// and it refuses what the shredder refuses (invalid UTF-8, lone
// surrogates), so that a value the validator passes is one the shredder
// can read. A member given twice keeps its last value, as encoding/json
// does; the shredder rejects the record then.
type decoder struct {
	scan jsonscan.Scanner
}

var errTrailing = errors.New("more after the JSON value")

func (d *decoder) decode(text []byte) (any, error) {
	d.scan.Reset(text)
	k, err := d.scan.Next()
	if err != nil {
		if err == io.EOF {
			return nil, io.ErrUnexpectedEOF
		}
		return nil, err
	}
	v, err := d.value(k)
	if err != nil {
		return nil, err
	}
	if _, err := d.scan.Next(); err != io.EOF {
		if err == nil {
			err = errTrailing
		}
		return nil, err
	}
	return v, nil
}

// value returns the value whose first token k was just read.
func (d *decoder) value(k jsonscan.Kind) (any, error) {
	switch k {
	case jsonscan.Null:
		return nil, nil
	case jsonscan.True:
		return true, nil
	case jsonscan.False:
		return false, nil
	case jsonscan.Number:
		return json.Number(d.scan.Bytes()), nil
	case jsonscan.String:
		return string(d.scan.Bytes()), nil
	case jsonscan.BeginArray:
		arr := []any{}
		for {
			k, err := d.scan.Next()
			if err != nil {
				return nil, err
			}
			if k == jsonscan.EndArray {
				return arr, nil
			}
			v, err := d.value(k)
			if err != nil {
				return nil, err
			}
			arr = append(arr, v)
		}
	case jsonscan.BeginObject:
		obj := map[string]any{}
		for {
			k, err := d.scan.Next()
			if err != nil {
				return nil, err
			}
			if k == jsonscan.EndObject {
				return obj, nil
			}
			name := string(d.scan.Bytes())
			if k, err = d.scan.Next(); err != nil {
				return nil, err
			}
			v, err := d.value(k)
			if err != nil {
				return nil, err
			}
			obj[name] = v
		}
	}
	return nil, errors.New("unexpected token " + k.String())
}
