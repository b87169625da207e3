package config

import "slices"

// jsonFileSpec is format.type json: JSON objects of format.schema_file's
// Parquet schema.
var jsonFileSpec = formatSpec{
	fieldColumns: true,
	lossyNumbers: true,
	refused:      slices.Concat(protobufKeys, []string{"column", "shred", "shred_sample", "registry", "schema_compatibility"}),
	read:         (*decoder).jsonFile,
	redact: func(format *node, f Format) {
		format.add("schema_file", yStr(f.SchemaFile), "ignore_unknown_fields", yBool(f.IgnoreUnknownFields), "lossy_numbers", yBool(f.LossyNumbers))
	},
	nanos: true,
}

// jsonFile reads the keys of format.type json.
func (d *decoder) jsonFile(s *section, f *Format, _ bool) {
	d.file(s, "schema_file", &f.SchemaFile)
	if !s.has("schema_file") && !s.bad["schema_file"] {
		s.d.errorf(s.lineOf("type"), s.key("schema_file"), "required when format.type is json")
	}
	s.boolean("ignore_unknown_fields", &f.IgnoreUnknownFields)
}
