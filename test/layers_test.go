package test

import (
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pqsink/pqsink/internal/testutil"
)

// The layering of issue 18, checked on the import graph that `go list`
// reports (non-test imports only): the writer depends on column buffers,
// not on Avro or HTTP; internal/ holds leaves; and no production package
// imports the test helpers under test/.

const module = "github.com/pqsink/pqsink/"

// listedPackage is one package of `go list -deps -json`.
type listedPackage struct {
	ImportPath string
	Imports    []string
	Deps       []string
	Standard   bool
}

// listPackages returns every package of the module and of its dependencies
// by import path.
func listPackages(t *testing.T) map[string]*listedPackage {
	t.Helper()
	cmd := exec.Command("go", "list", "-deps", "-json=ImportPath,Imports,Deps,Standard", "./...")
	cmd.Dir = testutil.RepoRoot(t)
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("go list: %v\n%s", err, ee.Stderr)
		}
		t.Fatalf("go list: %v", err)
	}
	pkgs := map[string]*listedPackage{}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		p := new(listedPackage)
		if err := dec.Decode(p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("go list output: %v", err)
		}
		pkgs[p.ImportPath] = p
	}
	if pkgs[module+"writer"] == nil || pkgs[module+"rowgroup"] == nil {
		t.Fatalf("go list found %d packages, without writer or rowgroup", len(pkgs))
	}
	return pkgs
}

// under reports whether path is the module's package at one of dirs, or a
// package below one of them.
func under(path string, dirs ...string) bool {
	for _, d := range dirs {
		if path == module+d || strings.HasPrefix(path, module+d+"/") {
			return true
		}
	}
	return false
}

// importers returns the packages among paths that import target directly.
func importers(pkgs map[string]*listedPackage, paths []string, target string) []string {
	var out []string
	for _, p := range paths {
		if q := pkgs[p]; q != nil && slices.Contains(q.Imports, target) {
			out = append(out, p)
		}
	}
	return out
}

func TestLayers(t *testing.T) {
	pkgs := listPackages(t)
	var ours []string
	for p := range pkgs {
		if strings.HasPrefix(p, module) {
			ours = append(ours, p)
		}
	}
	slices.Sort(ours)
	writer := pkgs[module+"writer"]
	writerDeps := append([]string{writer.ImportPath}, writer.Deps...)

	// The module's packages of one record format each, and the libraries
	// they are built on.
	formatPackages := []string{"schema/avro", "schema/protobuf", "schema/jsonschema", "rowgroup/avrorow", "rowgroup/protorow"}
	formatLibraries := []string{"github.com/linkedin/goavro/v2", "github.com/santhosh-tekuri/jsonschema/v6", "github.com/bufbuild/protocompile"}
	isFormat := func(d string) bool {
		return under(d, formatPackages...) || slices.ContainsFunc(formatLibraries, func(l string) bool { return d == l || strings.HasPrefix(d, l+"/") })
	}
	// The sink side of each format, each registered in format/all.
	formatDrivers := []string{module + "format/jsonfile", module + "format/variantfmt", module + "schema/avro/avrofmt",
		module + "schema/protobuf/protofmt", module + "schema/jsonschema/jsonschemafmt"}
	// connectorPart is the rule of a package split out of connector: of
	// the module, it imports only what lies under allowed but not under
	// denied, and it depends on no connector package and no format.
	connectorPart := func(dir string, allowed, denied []string) func() []string {
		return func() []string {
			p := module + dir
			q := pkgs[p]
			if q == nil {
				return []string{"go list does not name " + p}
			}
			var bad []string
			for _, imp := range q.Imports {
				if strings.HasPrefix(imp, module) && (!under(imp, allowed...) || under(imp, denied...)) {
					bad = append(bad, p+" imports "+imp)
				}
			}
			for _, d := range q.Deps {
				if under(d, "connector") || isFormat(d) {
					bad = append(bad, p+" depends on "+d)
				}
			}
			return bad
		}
	}

	cases := []struct {
		name string
		bad  func() []string // what breaks the rule, described
	}{
		{"the writer depends on no Avro package", func() []string {
			var bad []string
			for _, d := range writerDeps {
				if under(d, "schema/avro", "rowgroup/avrorow") || strings.HasPrefix(d, "github.com/linkedin/goavro") {
					bad = append(bad, "writer depends on "+d)
				}
			}
			return bad
		}},
		// The brotli codec (compress/) imports net/http for its
		// HTTPCompressor; that import is the one way to it the writer
		// may have, since dropping it means dropping the codec.
		{"the writer reaches net/http only through the brotli library", func() []string {
			var bad []string
			for _, p := range importers(pkgs, writerDeps, "net/http") {
				if p != "github.com/andybalholm/brotli" {
					bad = append(bad, p+" imports net/http, and the writer depends on it")
				}
			}
			return bad
		}},
		{"internal/ packages import no connector, reader, rowgroup, writer or convert", func() []string {
			var bad []string
			for _, p := range ours {
				if !under(p, "internal") {
					continue
				}
				for _, imp := range pkgs[p].Imports {
					if under(imp, "connector", "reader", "rowgroup", "writer", "convert") {
						bad = append(bad, p+" imports "+imp)
					}
				}
			}
			return bad
		}},
		// The archive's contract and the packages that rewrite a table's
		// files read the records' schema footer keys from archive
		// (archive.RecordSchemaKey), not from the formats: a format
		// package, or a format's library, among their dependencies pulls
		// a schema compiler into every compaction.
		{"archive, archive/envelope, merge and compact depend on no format", func() []string {
			var bad []string
			for _, p := range []string{"archive", "archive/envelope", "merge", "compact"} {
				q := pkgs[module+p]
				if q == nil {
					bad = append(bad, "go list does not name "+module+p)
					continue
				}
				for _, d := range q.Deps {
					if isFormat(d) {
						bad = append(bad, p+" depends on "+d)
					}
				}
			}
			return bad
		}},
		// The tables' maintenance scheduling is one of the packages the
		// sink runtime is split into: connector hands it what it needs
		// (connector imports it, never the other way), and it runs
		// compaction and table upkeep without knowing any format.
		{"connector/maintenance imports only compact, table, objstore, config, archive and leaves; no connector, no format",
			connectorPart("connector/maintenance", []string{"compact", "table", "objstore", "config", "archive", "internal"}, []string{"archive/envelope", "internal/testutil"})},
		// The dead letters are another: connector hands the destination
		// its settings, the opened store, the Kafka client and hooks, and
		// the destination writes letters without knowing any format.
		{"connector/deadletter imports only objstore, config, archive, rowgroup and leaves; no connector, no format",
			connectorPart("connector/deadletter", []string{"objstore", "config", "archive", "rowgroup", "internal"}, []string{"archive/envelope", "rowgroup/avrorow", "rowgroup/protorow", "rowgroup/rowgrouptest", "internal/testutil"})},
		// The fetch multiplexer is another: connector hands it the Kafka
		// client, the fetch settings, the memory budget behind an
		// interface and a partition's room, and takes the records.
		{"connector/fetch imports only config, rowgroup and leaves; no connector, no format",
			connectorPart("connector/fetch", []string{"config", "rowgroup", "internal"}, []string{"rowgroup/avrorow", "rowgroup/protorow", "rowgroup/rowgrouptest", "internal/testutil"})},
		// So is the consumer group membership with its assignors and
		// offset commits: connector drives it through a Handler.
		{"connector/group imports only config and leaves; no connector, no format",
			connectorPart("connector/group", []string{"config", "internal"}, []string{"internal/testutil"})},
		// The table committer is another: the partition pipeline hands it
		// finished files and progress (and a function committing the
		// Kafka offsets after the table), and it commits them to the table
		// without knowing the pipeline or any format.
		{"connector/tablecommit imports only table, archive, config, meta, schema and leaves; no connector, no format",
			connectorPart("connector/tablecommit", []string{"table", "archive", "config", "meta", "schema", "internal"}, []string{"archive/envelope", "table/keyindex", "schema/avro", "schema/protobuf", "schema/jsonschema", "internal/testutil"})},
		// The memory budget and its pressure relief are another: the
		// holders of memory (the sink's partitions) are Holders to it,
		// and the fetches and compactions reserve in it.
		{"connector/budget imports only objstore; no connector, no format",
			connectorPart("connector/budget", []string{"objstore"}, nil)},
		// So is readiness: connector hands health the state it keeps
		// (Status), its topics' listing and its store.
		{"connector/health imports only archive, objstore and leaves; no connector, no format",
			connectorPart("connector/health", []string{"archive", "objstore", "internal"}, []string{"archive/envelope", "internal/testutil"})},
		// The path fields are another: a JSON field lookup and the
		// reading of a binary payload's path values through the seam's
		// Lookup, knowing no format and no pipeline.
		{"connector/pathfields imports only format, archive, reader, schema, meta and leaves; no connector, no format",
			connectorPart("connector/pathfields", []string{"format", "archive", "reader", "schema", "meta", "internal"}, []string{"format/all", "format/jsonfile", "format/variantfmt", "archive/envelope", "schema/avro", "schema/protobuf", "schema/jsonschema", "internal/testutil"})},
		// The metrics observe the sink from outside: connector/metrics
		// reads connector's Reading, histograms and readiness, and imports
		// nothing else of the module; no connector package imports it
		// (the command serves a sink with it).
		{"connector/metrics imports only connector; no connector package imports it", func() []string {
			p := module + "connector/metrics"
			q := pkgs[p]
			if q == nil {
				return []string{"go list does not name " + p}
			}
			var bad []string
			for _, imp := range q.Imports {
				if strings.HasPrefix(imp, module) && imp != module+"connector" {
					bad = append(bad, p+" imports "+imp)
				}
			}
			for name, r := range pkgs {
				if under(name, "connector") && slices.Contains(r.Deps, p) {
					bad = append(bad, name+" depends on "+p)
				}
			}
			return bad
		}},
		// The key index of upsert tables is a leaf: the sink and the
		// table code use it, it knows no table, format or connector.
		{"table/keyindex imports nothing of the module", func() []string {
			q := pkgs[module+"table/keyindex"]
			if q == nil {
				return []string{"go list does not name " + module + "table/keyindex"}
			}
			var bad []string
			for _, imp := range q.Imports {
				if strings.HasPrefix(imp, module) {
					bad = append(bad, "table/keyindex imports "+imp)
				}
			}
			for _, d := range q.Deps {
				if under(d, "connector") || isFormat(d) {
					bad = append(bad, "table/keyindex depends on "+d)
				}
			}
			return bad
		}},
		// The format seam: package format is the interface a
		// format implements and the registry; each format's sink side
		// lives in its own folder and registers there; format/all is the
		// one list that imports them all, and the sink imports that list,
		// never a format.
		{"the format seam imports no format and no connector", func() []string {
			var bad []string
			q := pkgs[module+"format"]
			if q == nil {
				return []string{"go list does not name " + module + "format"}
			}
			for _, d := range q.Deps {
				if isFormat(d) || under(d, "connector", "format/all") || slices.Contains(formatDrivers, d) {
					bad = append(bad, "format depends on "+d)
				}
			}
			return bad
		}},
		{"a format's sink package imports the seam and no connector package", func() []string {
			var bad []string
			for _, p := range formatDrivers {
				q := pkgs[p]
				if q == nil {
					bad = append(bad, "go list does not name "+p)
					continue
				}
				if !slices.Contains(q.Imports, module+"format") {
					bad = append(bad, p+" does not import "+module+"format")
				}
				for _, d := range q.Deps {
					if under(d, "connector") {
						bad = append(bad, p+" depends on "+d)
					}
				}
			}
			return bad
		}},
		{"only the registration list (format/all) imports a format's sink package", func() []string {
			var bad []string
			for _, p := range ours {
				if p == module+"format/all" {
					continue
				}
				for _, imp := range pkgs[p].Imports {
					if slices.Contains(formatDrivers, imp) {
						bad = append(bad, p+" imports "+imp)
					}
				}
			}
			// Every package that implements the seam is listed.
			for _, p := range ours {
				if p != module+"connector" && p != module+"connector/source" && p != module+"connector/pathfields" && p != module+"format/all" && p != module+"format/formattest" && slices.Contains(pkgs[p].Imports, module+"format") && !slices.Contains(formatDrivers, p) {
					bad = append(bad, p+" imports the format seam but is not among the formats the layering knows (formatDrivers)")
				}
			}
			return bad
		}},
		{"connector imports no format package, only the seam and its registration list", func() []string {
			var bad []string
			for _, imp := range pkgs[module+"connector"].Imports {
				if isFormat(imp) || slices.Contains(formatDrivers, imp) {
					bad = append(bad, "connector imports "+imp)
				}
			}
			return bad
		}},
		// The Schema Registry client is one package that every registry
		// format uses; it stays a leaf (the standard library only), and a
		// format reaches the registry through it, not through another
		// format's package.
		{"internal/schemaregistry imports only the standard library", func() []string {
			var bad []string
			q := pkgs[module+"internal/schemaregistry"]
			if q == nil {
				return []string{"go list does not name " + module + "internal/schemaregistry"}
			}
			for _, d := range q.Deps {
				if p := pkgs[d]; p == nil || !p.Standard {
					bad = append(bad, "internal/schemaregistry depends on "+d)
				}
			}
			return bad
		}},
		{"the Protobuf and JSON Schema formats reach the registry without Avro", func() []string {
			var bad []string
			for _, p := range []string{"schema/protobuf", "schema/protobuf/protofmt", "schema/jsonschema", "schema/jsonschema/jsonschemafmt"} {
				q := pkgs[module+p]
				if q == nil {
					bad = append(bad, "go list does not name "+module+p)
					continue
				}
				for _, d := range q.Deps {
					if under(d, "schema/avro") || strings.HasPrefix(d, "github.com/linkedin/goavro") {
						bad = append(bad, p+" depends on "+d)
					}
				}
			}
			return bad
		}},
		// Replay reaches the formats' replay sides (format.Replayer)
		// through the same registration list, never a format package.
		{"connector/source imports no format package, only the seam and its registration list", func() []string {
			var bad []string
			q := pkgs[module+"connector/source"]
			if q == nil {
				return []string{"go list does not name " + module + "connector/source"}
			}
			for _, imp := range q.Imports {
				if isFormat(imp) || slices.Contains(formatDrivers, imp) {
					bad = append(bad, "connector/source imports "+imp)
				}
			}
			return bad
		}},
		{"no production package imports the test helpers under test/", func() []string {
			var bad []string
			for _, p := range ours {
				if under(p, "test") {
					continue
				}
				for _, imp := range pkgs[p].Imports {
					if under(imp, "test") {
						bad = append(bad, p+" imports "+imp)
					}
				}
			}
			return bad
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, b := range c.bad() {
				t.Error(b)
			}
		})
	}
}

// TestArchitectureNamesEveryPackage: docs/architecture.md describes the
// packages; a package it does not name (as `dir/` or `dir`) is one the
// next reader cannot place. Test helpers under test/ are left out.
func TestArchitectureNamesEveryPackage(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join(testutil.RepoRoot(t), "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	var missing []string
	for path := range listPackages(t) {
		rel, ok := strings.CutPrefix(path, module)
		if !ok || rel == "test" || strings.HasPrefix(rel, "test/") {
			continue
		}
		if !strings.Contains(string(doc), "`"+rel+"/`") && !strings.Contains(string(doc), "`"+rel+"`") {
			missing = append(missing, rel)
		}
	}
	slices.Sort(missing)
	if len(missing) > 0 {
		t.Errorf("docs/architecture.md does not name these packages: %s", strings.Join(missing, ", "))
	}
}
