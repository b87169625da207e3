package config

// formatSpec is what the config knows of one format.type: the keys of the
// format section it refuses, how it reads and prints its own keys, and the
// table keys that depend on it. Each format's spec is in a file of its own
// (jsonfile.go, variant.go, avro.go, protobuf.go, jsonschema.go), and the
// config asks formatSpecs by format.type instead of branching on it; the
// sink's side of the format (package format's Driver) opens it from the
// keys read here.
type formatSpec struct {
	// lossyNumbers reports whether the type takes format.lossy_numbers;
	// it is read before the refused keys are checked.
	lossyNumbers bool
	// refused are the keys of the format section that the type does not
	// use, in the order they are reported.
	refused []string
	// read reads the type's own keys into f, after the refused keys are
	// checked; envelope is the top-level envelope key. nil: no keys of its
	// own.
	read func(d *decoder, s *section, f *Format, envelope bool)
	// redact adds the type's keys to the printed format section (after
	// type); nil: none.
	redact func(format *node, f Format)
	// tableVersion is the least Iceberg format version of a table of the
	// type's records, also its default when over 2; 0: any.
	tableVersion int
	// tableVersionWhy is the error of a lower table.format_version.
	tableVersionWhy string
	// nanos reports whether the type has timestamps with nanoseconds that
	// table.timestamp_precision: micros cuts.
	nanos bool
	// fieldColumns reports whether the type's records have fields of
	// their own, each a column that can partition a table (a VARIANT's
	// value is one column).
	fieldColumns bool
}

// formatSpecs are the formats' specs by format.type; formatValues lists
// the same names in the order the config names them.
var formatSpecs = map[string]formatSpec{
	"json":        jsonFileSpec,
	"variant":     variantSpec,
	"avro":        avroSpec,
	"protobuf":    protobufSpec,
	"json_schema": jsonSchemaSpec,
}

// unknownFormat is the spec of a format.type that is not one (an error
// already): lossy_numbers is read and the protobuf keys refused, so that
// their errors are reported too.
var unknownFormat = formatSpec{lossyNumbers: true, refused: protobufKeys}

// FormatTypes returns the values format.type takes, in the order the
// config names them: each is a format that the sink's registration list
// (format/all) registers under the same name.
func FormatTypes() []string {
	return append([]string(nil), formatValues...)
}

// FieldColumns reports whether the records of the format have fields of
// their own, each a column: a payload field can then partition a table.
func (f Format) FieldColumns() bool { return specOf(f.Type).fieldColumns }

// specOf returns the spec of format.type t.
func specOf(t string) formatSpec {
	if spec, ok := formatSpecs[t]; ok {
		return spec
	}
	return unknownFormat
}

// format reads the format section.
func (d *decoder) format(s *section, f *Format, envelope bool) {
	s.oneOf("type", &f.Type, formatValues, notYet)
	s.require("type")
	spec := specOf(f.Type)
	if spec.lossyNumbers {
		s.boolean("lossy_numbers", &f.LossyNumbers)
	}
	// Keys that belong to another type are refused rather than ignored.
	for _, k := range spec.refused {
		if s.given(k) {
			s.fail(k, "not used when format.type is %s", f.Type)
		}
	}
	if spec.read != nil {
		spec.read(d, s, f, envelope)
	}
	// Whether the type reads the envelope is the format's to say
	// (format.Keyer), when the sink opens it.
	s.oneOf("envelope", &f.Envelope, envelopeValues, nil)
}

// envelopeValues are the values of format.envelope.
var envelopeValues = []string{"debezium"}

// redactFormat renders the format section of the redacted config.
func redactFormat(f Format) *node {
	format := yMap("type", yStr(f.Type))
	if spec := specOf(f.Type); spec.redact != nil {
		spec.redact(format, f)
	}
	if f.Envelope != "" {
		format.add("envelope", yStr(f.Envelope))
	}
	return format
}

// redactRegistry renders format.registry.
func redactRegistry(r *Registry) *node {
	return yMap(
		"url", yStr(r.URL),
		"username", yStr(r.Username),
		"password", ySecret(r.Password),
		"ca_file", yStr(r.CAFile),
		"cache_size", yInt(int64(r.CacheSize)),
		"timeout", yDuration(r.Timeout),
	)
}
