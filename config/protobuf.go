package config

import (
	"os"
	"strings"
)

// protobufKeys are the keys of the format section that only
// format.type protobuf takes.
var protobufKeys = []string{"proto_file", "import_paths", "message"}

// Protobuf is the part of the format section for format.type protobuf:
// plain messages of one type from a .proto file, or the Confluent wire
// format with the schemas in format.registry.
type Protobuf struct {
	// ProtoFile is the .proto file that defines Message (proto_file), for
	// topics without a registry; refused with registry. Resolved against
	// Config.Dir.
	// Defaults to "".
	ProtoFile string
	// ImportPaths are the directories where ProtoFile's imports are found
	// (import_paths), besides ProtoFile's own; the well-known types
	// (google/protobuf/*.proto) are built in. Resolved against Config.Dir.
	// Defaults to none.
	ImportPaths []string
	// Message is the message type of the records (message): its full name
	// (shop.v1.Event), or its name when the file has one message of that
	// name. Required with proto_file; with a registry, each record's
	// message indexes name its type.
	// Defaults to "".
	Message string
}

// protobufSpec is format.type protobuf: the Confluent wire format with
// the schemas in format.registry, or plain messages of a .proto file's
// message. The other types refuse its keys (protobufKeys).
var protobufSpec = formatSpec{
	fieldColumns: true,
	refused:      []string{"schema_file", "ignore_unknown_fields", "column", "shred", "shred_sample", "lossy_numbers", "schema_compatibility"},
	read:         (*decoder).protobuf,
	redact:       redactProtobuf,
	nanos:        true,
}

// protobuf reads the keys of format.type protobuf.
func (d *decoder) protobuf(s *section, f *Format, _ bool) {
	if reg := s.optional("registry", registryKeys); reg != nil {
		f.Registry = d.registry(reg)
	}
	p := &Protobuf{}
	f.Protobuf = p
	d.file(s, "proto_file", &p.ProtoFile)
	if s.list("import_paths", &p.ImportPaths, true) {
		for i, dir := range p.ImportPaths {
			p.ImportPaths[i] = d.resolve(dir)
			if st, err := os.Stat(p.ImportPaths[i]); err != nil || !st.IsDir() {
				s.fail("import_paths", "%s is not a directory", quote(dir))
			}
		}
	}
	if s.str("message", &p.Message) && strings.TrimSpace(p.Message) == "" {
		s.fail("message", "must not be empty")
	}
	hasFile := s.has("proto_file") || s.bad["proto_file"]
	hasReg := f.Registry != nil || s.given("registry")
	switch {
	case hasFile && hasReg:
		s.fail("proto_file", "give either format.registry (the Confluent wire format) or format.proto_file (plain messages), not both")
	case !hasFile && !hasReg:
		s.d.errorf(s.lineOf("type"), s.key("registry"), "format.type protobuf needs format.registry (the Confluent wire format) or format.proto_file and format.message (plain messages)")
	case hasFile && !s.has("message") && !s.bad["message"]:
		s.d.errorf(s.lineOf("proto_file"), s.key("message"), "required with format.proto_file: the message type of the records")
	case hasReg && (s.given("message") || s.given("import_paths")):
		s.fail("message", "not used with format.registry: each record's message indexes name its type, and the registry's references its imports")
	}
}

// redactProtobuf adds the keys of format.type protobuf to the printed
// format section.
func redactProtobuf(format *node, f Format) {
	if r := f.Registry; r != nil {
		format.add("registry", redactRegistry(r))
		return
	}
	if p := f.Protobuf; p != nil {
		format.add("proto_file", yStr(p.ProtoFile), "import_paths", yStrs(p.ImportPaths), "message", yStr(p.Message))
	}
}
