package config

import "slices"

// avroSpec is format.type avro: the Confluent wire format, the writer
// schemas in format.registry.
var avroSpec = formatSpec{
	fieldColumns: true,
	refused:      slices.Concat(protobufKeys, []string{"schema_file", "ignore_unknown_fields", "column", "shred", "shred_sample", "lossy_numbers"}),
	read:         (*decoder).avro,
	redact: func(format *node, f Format) {
		if r := f.Registry; r != nil {
			format.add("registry", redactRegistry(r))
		}
		format.add("schema_compatibility", yStr(f.SchemaCompatibility))
	},
	nanos: true,
}

// avro reads the keys of format.type avro.
func (d *decoder) avro(s *section, f *Format, _ bool) {
	f.SchemaCompatibility = "none"
	s.oneOf("schema_compatibility", &f.SchemaCompatibility, compatValues, nil)
	if reg := s.optional("registry", registryKeys); reg != nil {
		f.Registry = d.registry(reg)
	} else if !s.bad["registry"] {
		s.d.errorf(s.lineOf("type"), s.key("registry"), "required when format.type is avro: the Schema Registry's url")
	}
}
