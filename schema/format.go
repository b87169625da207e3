package schema

import (
	"strconv"

	"github.com/pqsink/pqsink/meta"
)

// appendText appends the schema in message syntax. Names that are not a
// single bare word (empty, or with spaces, punctuation or non-ASCII bytes)
// are written as Go-quoted strings, which Parse accepts.
func (s *Schema) appendText(b []byte) []byte {
	b = append(b, "message "...)
	b = appendWord(b, s.name)
	b = append(b, " {\n"...)
	for _, f := range s.fields {
		b = f.appendText(b, 1)
	}
	return append(b, "}\n"...)
}

func (n *Node) appendText(b []byte, depth int) []byte {
	b = appendIndent(b, depth)
	b = append(b, n.Repetition.String()...)
	b = append(b, ' ')
	if n.isGroup() {
		b = append(b, "group"...)
	} else {
		b = appendPhysical(b, n.Physical, n.Length)
	}
	b = append(b, ' ')
	b = appendWord(b, n.Name)
	switch {
	case n.HasLegacy:
		b = append(b, " ("...)
		b = append(b, convertedName(n.Legacy)...)
		b = append(b, ')')
	case n.Logical.Kind != None:
		b = append(b, " ("...)
		b = n.Logical.appendText(b)
		b = append(b, ')')
	}
	if n.HasFieldID {
		b = append(b, " = "...)
		b = strconv.AppendInt(b, int64(n.FieldID), 10)
	}
	if !n.isGroup() {
		return append(b, ";\n"...)
	}
	b = append(b, " {\n"...)
	for _, f := range n.Fields {
		b = f.appendText(b, depth+1)
	}
	b = appendIndent(b, depth)
	return append(b, "}\n"...)
}

func appendIndent(b []byte, depth int) []byte {
	for range depth {
		b = append(b, "  "...)
	}
	return b
}

// physicalWords are the message-syntax names of the physical types.
var physicalWords = map[meta.Type]string{
	meta.TypeBoolean:           "boolean",
	meta.TypeInt32:             "int32",
	meta.TypeInt64:             "int64",
	meta.TypeInt96:             "int96",
	meta.TypeFloat:             "float",
	meta.TypeDouble:            "double",
	meta.TypeByteArray:         "binary",
	meta.TypeFixedLenByteArray: "fixed_len_byte_array",
}

func appendPhysical(b []byte, t meta.Type, length int32) []byte {
	b = append(b, physicalWords[t]...)
	if t == meta.TypeFixedLenByteArray {
		b = append(b, '(')
		b = strconv.AppendInt(b, int64(length), 10)
		b = append(b, ')')
	}
	return b
}
