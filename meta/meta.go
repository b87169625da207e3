// Package meta holds the Go form of the Parquet footer and page structs of
// parquet.thrift and their Thrift compact-protocol encoding.
//
// The struct, union and enum declarations, and their Append and Decode
// methods, are generated from parquet.thrift by ./internal/gen, so that field
// ids and requiredness come from the spec and cannot drift from it. Field
// names follow Go conventions (type_length is TypeLength, field_id is FieldID).
//
// Presence follows one rule throughout: optional scalars, enums, strings and
// structs are pointers (nil means absent); optional binary fields and lists
// are slices, nil meaning absent and a non-nil empty slice meaning present
// but empty, which matters for Statistics bounds. Required fields are values.
// A union is a struct with one pointer per member, of which one should be set.
//
// Decoding skips fields it does not know, of any type, checks that required
// fields are present, and treats its input as untrusted: malformed input
// gives a *DecodeError naming the struct path and byte offset, never a panic,
// and list sizes are checked against the remaining input before anything is
// allocated.
package meta

//go:generate go run ./internal/gen -in internal/gen/parquet.thrift -out thrift_gen.go

// Message is implemented by every struct and union of the package.
type Message interface {
	// Append appends the compact-protocol encoding of the message to dst.
	Append(dst []byte) []byte
	// Decode decodes one message from the start of src, replacing the
	// receiver's contents, and returns the number of bytes consumed.
	Decode(src []byte) (int, error)
}

// Marshal returns the compact-protocol encoding of m.
func Marshal(m Message) []byte {
	return m.Append(nil)
}

// Unmarshal decodes src into m. Unlike Decode it requires that src hold
// exactly one message: trailing bytes are an error.
func Unmarshal(src []byte, m Message) error {
	n, err := m.Decode(src)
	if err != nil {
		return err
	}
	if n != len(src) {
		return &DecodeError{Path: typeName(m), Offset: n, Err: ErrTrailingBytes}
	}
	return nil
}
