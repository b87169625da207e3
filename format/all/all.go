// Package all is the registration list of the sink's formats: the one
// package that imports every format. A new format is added here.
package all

import (
	"github.com/pqsink/pqsink/format"
	"github.com/pqsink/pqsink/format/jsonfile"
	"github.com/pqsink/pqsink/format/variantfmt"
	"github.com/pqsink/pqsink/schema/avro/avrofmt"
	"github.com/pqsink/pqsink/schema/jsonschema/jsonschemafmt"
	"github.com/pqsink/pqsink/schema/protobuf/protofmt"
)

// Formats returns a registry of every format, by its format.type, with
// the replay sides of those that have one.
func Formats() *format.Registry {
	r := format.NewRegistry()
	r.Register(jsonfile.Name, jsonfile.Open)
	r.Register(variantfmt.Name, variantfmt.Open)
	r.Register(avrofmt.Name, avrofmt.Open)
	r.Register(protofmt.Name, protofmt.Open)
	r.Register(jsonschemafmt.Name, jsonschemafmt.Open)
	// The replay sides, in the order replay asks them whether a file is
	// theirs.
	r.RegisterReplayer(protofmt.Name, protofmt.Replay)
	r.RegisterReplayer(jsonschemafmt.Name, jsonschemafmt.Replay)
	r.RegisterReplayer(avrofmt.Name, avrofmt.Replay)
	return r
}
