package config

// jsonSchemaRefused are the format keys that format.type json_schema does
// not use.
var jsonSchemaRefused = []string{"ignore_unknown_fields", "column", "shred", "shred_sample", "schema_compatibility"}

// jsonSchema reads the keys of format.type json_schema: a registry (the
// Confluent JSON Schema wire format) or a schema_file (plain JSON values),
// exactly one of them.
func (d *decoder) jsonSchema(s *section, f *Format) {
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
