package test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/pqsink/pqsink/internal/testutil"
)

// formatKinds are the names format.type takes: a production file that
// branches on one of them (`case "avro"`, `kind == "protobuf"`) knows a
// format, which only the format's own folder and the registration list
// may.
var formatKinds = []string{"json", "variant", "avro", "protobuf", "json_schema"}

// formatWord matches the names of identifiers that say a format: a
// constant, variable or field compared or switched on (`case valueAvro:`,
// `protoIn != nil`, `key == archive.AvroSchemaKey`) branches on a format as
// a string literal does. JSON and Variant are left out of it: as words they
// name Parquet's and the JSON encoding's types as often as formats.
var formatWord = regexp.MustCompile(`(?i)avro|proto|jsonschema|json_schema`)

// formatFolders are the folders that may branch on a format's name: each
// format's own code, and format/all, the registration list.
var formatFolders = []string{
	"format/all", "format/jsonfile", "format/variantfmt",
	"schema/avro", "schema/protobuf", "schema/jsonschema",
	"rowgroup/avrorow", "rowgroup/protorow",
}

// formatFiles are files outside the formats' folders that hold one
// format's own code, in a layer that the folder cannot hold: pqsink
// convert's input of each format (its flags, their checks, its schema).
// They branch on their own format's flags, as the folders do.
var formatFiles = []string{
	"cmd/pqsink/convert_avro.go", "cmd/pqsink/convert_protobuf.go", "cmd/pqsink/convert_jsonschema.go",
}

// formatBranchDebt lists the production files outside the formats' folders
// that still branch on a format's name, with how many such branches each
// has and why. It is the debt of the format seam: a file leaves it when
// its branches move behind the seam (docs/formats.md), and the test fails
// when a listed file's count is no longer true, so the list shrinks with
// the code and never hides a new branch.
var formatBranchDebt = map[string]struct {
	branches int
	reason   string
}{
	// Empty: every format branch is behind the seam. A new entry needs a
	// reason that a reviewer accepts.
}

// formatWordsElsewhere lists the production files outside the formats'
// folders whose branches on a format's word are not a format's logic,
// with their count and why. They are checked as formatBranchDebt is.
var formatWordsElsewhere = map[string]struct {
	branches int
	reason   string
}{
	"cmd/pqsink/run.go":     {1, `log.format "json" is the log's encoding, not a record format`},
	"archive/schemakeys.go": {1, "archive declares the records' schema footer keys once, so that envelope, merge and compact import no format (RecordSchemaKey)"},
}

// formatBranch is a branch on a format's name found in a file.
type formatBranch struct {
	pos  token.Position
	kind string
}

// formatBranches returns the branches on a format's name in the file f: a
// switch case, or an operand of == or !=, that is one of formatKinds as a
// string literal or an identifier that formatWord matches.
func formatBranches(fset *token.FileSet, f *ast.File) []formatBranch {
	var out []formatBranch
	kindOf := func(e ast.Expr) (string, bool) {
		switch e := e.(type) {
		case *ast.BasicLit:
			if e.Kind != token.STRING {
				return "", false
			}
			s, err := strconv.Unquote(e.Value)
			return s, err == nil && slices.Contains(formatKinds, s)
		case *ast.Ident:
			return e.Name, formatWord.MatchString(e.Name)
		case *ast.SelectorExpr:
			return e.Sel.Name, formatWord.MatchString(e.Sel.Name)
		}
		return "", false
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.CaseClause:
			for _, e := range n.List {
				if k, ok := kindOf(e); ok {
					out = append(out, formatBranch{fset.Position(e.Pos()), k})
				}
			}
		case *ast.BinaryExpr:
			if n.Op != token.EQL && n.Op != token.NEQ {
				break
			}
			for _, e := range []ast.Expr{n.X, n.Y} {
				if k, ok := kindOf(e); ok {
					out = append(out, formatBranch{fset.Position(e.Pos()), k})
				}
			}
		}
		return true
	})
	return out
}

// TestLayersFormatBranches: no production file outside a format's folder
// branches on a format's name, but those formatBranchDebt and
// formatWordsElsewhere list, each with exactly the branches it says.
func TestLayersFormatBranches(t *testing.T) {
	root := testutil.RepoRoot(t)
	fset := token.NewFileSet()
	found := map[string][]formatBranch{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel := filepath.ToSlash(strings.TrimPrefix(path, root+string(filepath.Separator)))
		if d.IsDir() {
			name := d.Name()
			// test/ holds the end-to-end tests and their helpers, not
			// production code.
			if path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "node_modules" || rel == "test") {
				return filepath.SkipDir
			}
			if slices.Contains(formatFolders, rel) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(rel, ".go") || strings.HasSuffix(rel, "_test.go") || slices.Contains(formatFiles, rel) {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		if b := formatBranches(fset, f); len(b) > 0 {
			found[rel] = b
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]int{}
	for rel, d := range formatBranchDebt {
		listed[rel] = d.branches
	}
	for rel, d := range formatWordsElsewhere {
		listed[rel] = d.branches
	}
	for rel, b := range found {
		n, ok := listed[rel]
		if ok && n == len(b) {
			continue
		}
		var where []string
		for _, x := range b {
			where = append(where, fmt.Sprintf("%d: %q", x.pos.Line, x.kind))
		}
		if !ok {
			t.Errorf("%s branches on a format's name (line %s): move the branch behind the format seam (docs/formats.md)", rel, strings.Join(where, ", line "))
			continue
		}
		t.Errorf("%s branches on a format's name %d times (line %s), the list says %d: update it", rel, len(b), strings.Join(where, ", line "), n)
	}
	for _, rel := range formatFiles {
		if _, err := os.Stat(filepath.Join(root, rel)); err != nil {
			t.Errorf("formatFiles names %s: %v", rel, err)
		}
	}
	for rel := range listed {
		if found[rel] == nil {
			t.Errorf("%s no longer branches on a format's name: remove it from the list", rel)
		}
	}
}
