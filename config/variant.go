package config

import (
	"math"
	"slices"
	"strings"
)

// variantSpec is format.type variant: JSON values in one VARIANT column,
// which Iceberg has from format version 3.
var variantSpec = formatSpec{
	lossyNumbers: true,
	refused:      slices.Concat(protobufKeys, []string{"schema_file", "ignore_unknown_fields", "registry", "schema_compatibility"}),
	read:         (*decoder).variant,
	redact: func(format *node, f Format) {
		format.add("column", yStr(f.Column), "shred", yStr(f.Shred), "shred_sample", yInt(int64(f.ShredSample)), "lossy_numbers", yBool(f.LossyNumbers))
	},
	tableVersion:    3,
	tableVersionWhy: "format.type variant needs 3: the variant type is new in Iceberg format version 3",
}

// variant reads the keys of format.type variant.
func (d *decoder) variant(s *section, f *Format, envelope bool) {
	if s.str("column", &f.Column) {
		switch {
		case strings.Contains(f.Column, "."):
			s.fail("column", "%s: a column name cannot contain '.'", quote(f.Column))
		case f.Column == "_kafka" && envelope:
			s.fail("column", "\"_kafka\" is the envelope's column group")
		}
	}
	var shred string
	if s.str("shred", &shred) {
		switch lower := strings.ToLower(shred); lower {
		case "auto", "none":
			f.Shred = lower
		default:
			f.Shred = d.resolve(shred)
			if err := checkFile(f.Shred); err != nil {
				s.fail("shred", "%v (want auto, none, or the path of a file listing the fields to shred)", err)
			}
		}
	}
	s.intValue("shred_sample", &f.ShredSample, 1, math.MaxInt32)
}
