package avrofmt

import (
	"bytes"
	"slices"

	"github.com/pqsink/pqsink/schema/avro"
)

// KeepsPaths reports whether records written with w, read as r by Avro's
// resolution rules (a file's reader schema under schema_compatibility:
// backward), keep the values of the fields at paths: the partition of a
// record follows its writer schema, and its file's columns must hold the
// values its path says. A field that r adds with a default other than
// null, that r renames with an alias, or an enum whose symbols r lacks
// some of (read as r's default symbol), would change them.
func KeepsPaths(w, r *avro.Type, paths [][]string) bool {
	for _, p := range paths {
		if !keepsPath(w, r, p) {
			return false
		}
	}
	return true
}

func keepsPath(w, r *avro.Type, p []string) bool {
	w, r = nonNull(w), nonNull(r)
	if len(p) == 0 {
		if w.Kind == avro.Enum && r.Kind == avro.Enum {
			for _, s := range w.Symbols {
				if !slices.Contains(r.Symbols, s) {
					return false
				}
			}
		}
		return true
	}
	if w.Kind != avro.Record || r.Kind != avro.Record {
		return w.Kind == r.Kind
	}
	wf, rf := recordField(w, p[0]), recordField(r, p[0])
	switch {
	case wf == nil && rf == nil:
		return true
	case rf == nil:
		return false
	case wf == nil:
		for _, a := range rf.Aliases {
			if recordField(w, a) != nil {
				return false
			}
		}
		return bytes.Equal(bytes.TrimSpace(rf.Default), []byte("null"))
	}
	return keepsPath(wf.Type, rf.Type, p[1:])
}

// nonNull is the type of t's values that are not null: t's other branch
// when t is a union of null and one type.
func nonNull(t *avro.Type) *avro.Type {
	if i, ok := t.Nullable(); ok && len(t.Branches) == 2 {
		return t.Branches[1-i]
	}
	return t
}

func recordField(t *avro.Type, name string) *avro.Field {
	for _, f := range t.Fields {
		if f.Name == name {
			return f
		}
	}
	return nil
}
