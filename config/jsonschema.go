package config

import "slices"

// jsonSchemaSpec is format.type json_schema: JSON values validated by a
// JSON Schema, from format.registry (the Confluent JSON Schema wire
// format) or format.schema_file.
var jsonSchemaSpec = formatSpec{
	fieldColumns: true,
	lossyNumbers: true,
	refused:      slices.Concat(protobufKeys, []string{"ignore_unknown_fields", "column", "shred", "shred_sample", "schema_compatibility"}),
	read:         (*decoder).jsonSchema,
	redact: func(format *node, f Format) {
		if r := f.Registry; r != nil {
			format.add("registry", redactRegistry(r))
		} else {
			format.add("schema_file", yStr(f.SchemaFile))
		}
		format.add("lossy_numbers", yBool(f.LossyNumbers))
	},
}

// jsonSchema reads the keys of format.type json_schema: a registry (the
// Confluent JSON Schema wire format) or a schema_file (plain JSON values),
// exactly one of them.
func (d *decoder) jsonSchema(s *section, f *Format, _ bool) {
	d.file(s, "schema_file", &f.SchemaFile)
	if reg := s.optional("registry", registryKeys); reg != nil {
		f.Registry = d.registry(reg)
	}
	switch {
	case s.bad["registry"] || s.bad["schema_file"]:
	case s.has("schema_file") && s.given("registry"):
		s.fail("schema_file", "not used with format.registry: the registry gives the schema of each record (use one of them)")
	case !s.has("schema_file") && !s.given("registry"):
		s.d.errorf(s.lineOf("type"), s.key("registry"), "required when format.type is json_schema: the Schema Registry's url, or format.schema_file for plain JSON values")
	}
}
