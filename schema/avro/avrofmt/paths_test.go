package avrofmt

import (
	"strings"
	"testing"

	"github.com/pqsink/pqsink/schema/avro"
)

// TestKeepsPaths: a record of one writer schema resolved onto a file's
// reader schema keeps its partition fields' values unless the reader
// adds one with a default other than null, renames one, drops one, or
// lacks a symbol of the writer's enum.
func TestKeepsPaths(t *testing.T) {
	rec := func(fields string) *avro.Type {
		return avro.MustParse(`{"type":"record","name":"r","fields":[` + fields + `]}`).Root
	}
	const base = `{"name":"id","type":"long"}`
	for _, c := range []struct {
		name string
		w, r string
		path string
		want bool
	}{
		{"same", base, base, "id", true},
		{"promoted", `{"name":"id","type":"int"}`, base, "id", true},
		{"added with null default", base, base + `,{"name":"c","type":["null","string"],"default":null}`, "c", true},
		{"added with a default", base, base + `,{"name":"c","type":"string","default":"web"}`, "c", false},
		{"renamed", base + `,{"name":"old","type":"string"}`, base + `,{"name":"c","type":["null","string"],"default":null,"aliases":["old"]}`, "c", false},
		{"dropped", base + `,{"name":"c","type":"string"}`, base, "c", false},
		{"absent from both", base, base, "c", true},
		{"enum grows", `{"name":"e","type":{"type":"enum","name":"e","symbols":["A"]}}`, `{"name":"e","type":{"type":"enum","name":"e","symbols":["A","B"]}}`, "e", true},
		{"enum shrinks", `{"name":"e","type":{"type":"enum","name":"e","symbols":["A","B"]}}`, `{"name":"e","type":{"type":"enum","name":"e","symbols":["A"],"default":"A"}}`, "e", false},
		{"nested, added with a default", `{"name":"p","type":["null",{"type":"record","name":"p","fields":[` + base + `]}],"default":null}`,
			`{"name":"p","type":["null",{"type":"record","name":"p","fields":[` + base + `,{"name":"l","type":"int","default":3}]}],"default":null}`, "p.l", false},
		{"nested, the same", `{"name":"p","type":["null",{"type":"record","name":"p","fields":[` + base + `]}],"default":null}`,
			`{"name":"p","type":["null",{"type":"record","name":"p","fields":[` + base + `]}],"default":null}`, "p.id", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := KeepsPaths(rec(c.w), rec(c.r), [][]string{strings.Split(c.path, ".")}); got != c.want {
				t.Errorf("KeepsPaths = %v, want %v", got, c.want)
			}
		})
	}
}

// TestAvroPathKeepsValues: under backward, a record is resolved into a
// file of a newer reader schema only when that keeps its path fields'
// values; without a table, those are the path's {field} parts and
// time_field.
func TestAvroPathKeepsValues(t *testing.T) {
	w := avro.MustParse(`{"type":"record","name":"r","fields":[{"name":"id","type":"long"}]}`)
	r := avro.MustParse(`{"type":"record","name":"r","fields":[{"name":"id","type":"long"},
		{"name":"region","type":"string","default":"eu"},{"name":"note","type":["null","string"],"default":null}]}`)
	for _, c := range []struct {
		paths [][]string
		keeps bool
	}{
		{[][]string{{"id"}}, true},
		{[][]string{{"note"}}, true},    // absent in w, null by r's default: the null folder either way
		{[][]string{{"region"}}, false}, // absent in w (null folder), "eu" once resolved
		{[][]string{{"id"}, {"region"}}, false},
	} {
		if got := KeepsPaths(w.Root, r.Root, c.paths); got != c.keeps {
			t.Errorf("paths %v: keeps %v, want %v", c.paths, got, c.keeps)
		}
	}
	if !KeepsPaths(w.Root, r.Root, nil) {
		t.Error("without path fields or a table, every resolution keeps the (no) values")
	}
}
