package protorow

import (
	"errors"
	"fmt"
	"math"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protowire"
)

// variant reads a Struct, Value, ListValue, Any or field-less message
// into a VARIANT's metadata and value columns. Struct is an object, Value
// the JSON value it holds (NULL when no kind is set), ListValue an array,
// Any the object {"@type": type_url, "value": the packed bytes as
// binary}, a message without fields the empty object.
func (d *Decoder) variant(f *fieldOp, b []byte, rep uint8) error {
	vb := &d.vb
	vb.Reset()
	var err error
	switch f.variant {
	case vStruct:
		err = d.vStruct(f, b, 0)
	case vValue:
		err = d.vValue(f, b, 0)
	case vList:
		err = d.vList(f, b, 0)
	case vAny:
		err = d.vAny(f, b)
	default:
		if err = d.skipAll(f, b); err == nil {
			vb.BeginObject()
			vb.EndObject()
		}
	}
	if err != nil {
		vb.Reset()
		return err
	}
	d.vmeta, d.vval, err = vb.Finish(d.vmeta[:0], d.vval[:0])
	if err != nil {
		return d.recordErr(f.path, b, err)
	}
	f.col.AppendBytes(rep, d.vmeta)
	f.col2.AppendBytes(rep, d.vval)
	return nil
}

// fields calls fn on each field of the message b: its number, wire type
// and the bytes of its value (for a varint or a fixed value, the value in
// v; for length-delimited ones, the bytes in p).
func (d *Decoder) fields(f *fieldOp, b []byte, fn func(num protowire.Number, wt protowire.Type, v uint64, p []byte) error) error {
	for len(b) > 0 {
		num, wt, n := protowire.ConsumeTag(b)
		if n < 0 {
			return d.recordErr(f.path, b, parseErr(n))
		}
		b = b[n:]
		var v uint64
		var p []byte
		switch wt {
		case protowire.VarintType:
			v, n = protowire.ConsumeVarint(b)
		case protowire.Fixed64Type:
			v, n = protowire.ConsumeFixed64(b)
		case protowire.Fixed32Type:
			var v32 uint32
			v32, n = protowire.ConsumeFixed32(b)
			v = uint64(v32)
		case protowire.BytesType:
			p, n = protowire.ConsumeBytes(b)
		default:
			n = protowire.ConsumeFieldValue(num, wt, b)
		}
		if n < 0 {
			return d.recordErr(f.path, b, parseErr(n))
		}
		if err := fn(num, wt, v, p); err != nil {
			return err
		}
		b = b[n:]
	}
	return nil
}

func (d *Decoder) skipAll(f *fieldOp, b []byte) error {
	return d.fields(f, b, func(protowire.Number, protowire.Type, uint64, []byte) error { return nil })
}

func (d *Decoder) deep(f *fieldOp, b []byte, depth int) error {
	if depth > maxVariantDepth {
		return d.recordErr(f.path, b, fmt.Errorf("Struct, Value and ListValue nested more than %d deep", maxVariantDepth))
	}
	return nil
}

func (d *Decoder) vStruct(f *fieldOp, b []byte, depth int) error {
	if err := d.deep(f, b, depth); err != nil {
		return err
	}
	d.vb.BeginObject()
	err := d.fields(f, b, func(num protowire.Number, wt protowire.Type, _ uint64, entry []byte) error {
		if num != 1 {
			return nil
		}
		if wt != protowire.BytesType {
			return d.recordErr(f.path, b, fmt.Errorf("Struct.fields: wire type %d, want 2", wt))
		}
		var key, val []byte
		hasVal := false
		err := d.fields(f, entry, func(num protowire.Number, wt protowire.Type, _ uint64, p []byte) error {
			if (num == 1 || num == 2) && wt != protowire.BytesType {
				return d.recordErr(f.path, entry, fmt.Errorf("Struct.fields entry field %d: wire type %d, want 2", num, wt))
			}
			switch num {
			case 1:
				key = p
			case 2:
				val, hasVal = p, true
			}
			return nil
		})
		if err != nil {
			return err
		}
		if !utf8.Valid(key) {
			return d.recordErr(f.path, entry, errors.New("Struct key is not valid UTF-8"))
		}
		d.vb.Key(string(key))
		if !hasVal {
			d.vb.Null()
			return nil
		}
		return d.vValue(f, val, depth+1)
	})
	if err != nil {
		return err
	}
	d.vb.EndObject()
	return nil
}

func (d *Decoder) vList(f *fieldOp, b []byte, depth int) error {
	if err := d.deep(f, b, depth); err != nil {
		return err
	}
	d.vb.BeginArray()
	err := d.fields(f, b, func(num protowire.Number, wt protowire.Type, _ uint64, p []byte) error {
		if num != 1 {
			return nil
		}
		if wt != protowire.BytesType {
			return d.recordErr(f.path, b, fmt.Errorf("ListValue.values: wire type %d, want 2", wt))
		}
		return d.vValue(f, p, depth+1)
	})
	if err != nil {
		return err
	}
	d.vb.EndArray()
	return nil
}

// vValue reads a google.protobuf.Value: the last kind on the wire wins, as
// protobuf's oneof semantics say.
func (d *Decoder) vValue(f *fieldOp, b []byte, depth int) error {
	if err := d.deep(f, b, depth); err != nil {
		return err
	}
	kind := protowire.Number(0)
	var num uint64
	var p []byte
	wants := [...]protowire.Type{1: protowire.VarintType, 2: protowire.Fixed64Type, 3: protowire.BytesType,
		4: protowire.VarintType, 5: protowire.BytesType, 6: protowire.BytesType}
	err := d.fields(f, b, func(n protowire.Number, wt protowire.Type, v uint64, q []byte) error {
		if n < 1 || n > 6 {
			return nil
		}
		if wt != wants[n] {
			return d.recordErr(f.path, b, fmt.Errorf("Value field %d: wire type %d, want %d", n, wt, wants[n]))
		}
		kind, num, p = n, v, q
		return nil
	})
	if err != nil {
		return err
	}
	switch kind {
	case 0, 1:
		d.vb.Null()
	case 2:
		d.vb.Double(math.Float64frombits(num))
	case 3:
		if !utf8.Valid(p) {
			return d.recordErr(f.path, b, errors.New("Value.string_value is not valid UTF-8"))
		}
		d.vb.String(string(p))
	case 4:
		d.vb.Bool(num != 0)
	case 5:
		return d.vStruct(f, p, depth+1)
	case 6:
		return d.vList(f, p, depth+1)
	}
	return nil
}

func (d *Decoder) vAny(f *fieldOp, b []byte) error {
	var url, val []byte
	err := d.fields(f, b, func(n protowire.Number, wt protowire.Type, _ uint64, p []byte) error {
		if (n == 1 || n == 2) && wt != protowire.BytesType {
			return d.recordErr(f.path, b, fmt.Errorf("Any field %d: wire type %d, want 2", n, wt))
		}
		switch n {
		case 1:
			url = p
		case 2:
			val = p
		}
		return nil
	})
	if err != nil {
		return err
	}
	if !utf8.Valid(url) {
		return d.recordErr(f.path, b, errors.New("Any.type_url is not valid UTF-8"))
	}
	d.vb.BeginObject()
	d.vb.Key("@type")
	d.vb.String(string(url))
	d.vb.Key("value")
	d.vb.Binary(val)
	d.vb.EndObject()
	return nil
}
