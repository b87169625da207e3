package test

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/pqsink/pqsink/internal/testutil"
)

// TestArchitectureImports keeps the "imports (of ours)" column of
// docs/architecture.md's package table true to the import graph that
// `go list` reports (non-test imports of the module's packages).
//
// How a row is read:
//
//   - The first column names packages in backquotes, a trailing "/"
//     dropped. A row covers each package it names and every package below
//     a name it gives that no other row names more closely (the `internal/`
//     row covers internal/events, internal/kafkaauth…; `internal/testutil/`
//     covers internal/testutil and the packages under it). Every package
//     of the module must be covered by a row, and every name must be a
//     package or a folder of packages.
//   - Imports between the packages a row covers are the row's own business
//     and are not listed.
//   - The third column lists imports as `pkg`, comma separated. In a row
//     that covers several packages, `pkg` (`a`, `b`) says that the covered
//     packages a and b (matched by their path or its last elements), and
//     no other of the row's, import pkg; `pkg` alone says that some of
//     them do. A parenthesis that is not a list of backquoted names is a
//     remark.
//   - "none" means the covered packages import none of the module's.
//   - "everything" and "everything above" (the sink runtime, the command)
//     and an empty column (test/) are not checked; a column that ends in
//     "…" is checked loosely: what it lists must be imported, and more may
//     be.
//
// Backquoted names in a row's description that begin with one of the
// row's names and a "/" (file names aside) must be packages too, so that a package removed
// from the tree is removed from the table.
func TestArchitectureImports(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join(testutil.RepoRoot(t), "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	rows, err := packageRows(string(doc))
	if err != nil {
		t.Fatal(err)
	}

	// The module's packages, relative to the module, and their imports of
	// the module's packages.
	imports := map[string][]string{}
	for path, p := range listPackages(t) {
		rel, ok := strings.CutPrefix(path, module)
		if !ok {
			continue
		}
		var ours []string
		for _, imp := range p.Imports {
			if r, ok := strings.CutPrefix(imp, module); ok {
				ours = append(ours, r)
			}
		}
		imports[rel] = ours
	}

	// Which row covers each package: the row with the longest name that is
	// the package or a folder above it.
	names := map[string]int{} // a name of the first column -> its row
	for i, r := range rows {
		for _, n := range r.names {
			if j, ok := names[n]; ok {
				t.Errorf("docs/architecture.md names `%s` in two rows (%d and %d)", n, j+1, i+1)
			}
			names[n] = i
		}
	}
	members := make([][]string, len(rows))
	for _, pkg := range slices.Sorted(maps.Keys(imports)) {
		best, row := "", -1
		for n, i := range names {
			if (pkg == n || strings.HasPrefix(pkg, n+"/")) && len(n) > len(best) {
				best, row = n, i
			}
		}
		if row < 0 {
			t.Errorf("package %s is in no row of docs/architecture.md's package table", pkg)
			continue
		}
		members[row] = append(members[row], pkg)
	}

	for i, r := range rows {
		label := "`" + strings.Join(r.names, "`, `") + "`"
		for _, n := range r.names {
			if !slices.ContainsFunc(members[i], func(m string) bool { return m == n || strings.HasPrefix(m, n+"/") }) {
				t.Errorf("row %s: `%s` is not a package of the module (go list does not know it)", label, n)
			}
		}
		for _, n := range r.described {
			if _, ok := imports[n]; !ok {
				t.Errorf("row %s: its description names `%s`, which is not a package of the module (go list does not know it)", label, n)
			}
		}
		if r.unchecked {
			continue
		}

		// importers[pkg]: the row's packages that import pkg, from outside
		// the row.
		importers := map[string][]string{}
		for _, m := range members[i] {
			for _, imp := range imports[m] {
				if !slices.Contains(members[i], imp) {
					importers[imp] = append(importers[imp], m)
				}
			}
		}
		for _, l := range r.imports {
			if _, ok := imports[l.pkg]; !ok {
				t.Errorf("row %s: lists `%s`, which is not a package of the module", label, l.pkg)
				continue
			}
			got := importers[l.pkg]
			if len(got) == 0 {
				t.Errorf("row %s: lists `%s`, which %s does not import", label, l.pkg, strings.Join(members[i], ", "))
				continue
			}
			if l.by == nil {
				continue
			}
			var want []string
			for _, b := range l.by {
				matched := false
				for _, m := range members[i] {
					if m == b || strings.HasSuffix(m, "/"+b) {
						want, matched = append(want, m), true
					}
				}
				if !matched {
					t.Errorf("row %s: lists `%s` (`%s`), and `%s` is none of the row's packages (%s)", label, l.pkg, b, b, strings.Join(members[i], ", "))
				}
			}
			for _, m := range want {
				if !slices.Contains(got, m) {
					t.Errorf("row %s: says %s imports `%s`; it does not", label, m, l.pkg)
				}
			}
			for _, m := range got {
				if !slices.Contains(want, m) {
					t.Errorf("row %s: %s imports `%s`, which the row lists for %s only", label, m, l.pkg, strings.Join(l.by, ", "))
				}
			}
		}
		if r.loose {
			continue
		}
		for _, imp := range slices.Sorted(maps.Keys(importers)) {
			if !slices.ContainsFunc(r.imports, func(l listedImport) bool { return l.pkg == imp }) {
				t.Errorf("row %s: %s imports `%s`, which the row does not list", label, strings.Join(importers[imp], ", "), imp)
			}
		}
	}
}

// packageRow is one row of docs/architecture.md's package table.
type packageRow struct {
	names     []string // the first column's package names, without a trailing "/"
	described []string // names in the description below one of names
	imports   []listedImport
	unchecked bool // "everything…" or an empty column: imports not checked
	loose     bool // "…": the listed imports are checked, more may be
}

// listedImport is one entry of the imports column: `pkg`, and the row's
// packages that import it when the entry says so (`pkg` (`a`, `b`)).
type listedImport struct {
	pkg string
	by  []string
}

// packageRows reads the table under the "## Packages" heading of doc.
func packageRows(doc string) ([]packageRow, error) {
	var (
		quoted      = regexp.MustCompile("`([^`]+)`")
		importEntry = regexp.MustCompile("^`([^`]+)`\\s*(?:\\(([^)]*)\\))?$")
		bareNames   = regexp.MustCompile("^\\s*`[^`]+`(?:\\s*,\\s*`[^`]+`)*\\s*$")
	)
	_, rest, ok := strings.Cut(doc, "\n## Packages\n")
	if !ok {
		return nil, fmt.Errorf("docs/architecture.md has no \"## Packages\" section")
	}
	var rows []packageRow
	inTable := false
	for _, line := range strings.Split(rest, "\n") {
		if !strings.HasPrefix(line, "|") {
			if inTable {
				break
			}
			continue
		}
		inTable = true
		cells := strings.Split(line, "|")
		if len(cells) != 5 {
			return nil, fmt.Errorf("table row of %d cells, want 3: %.80s", len(cells)-2, line)
		}
		first, desc, imps := strings.TrimSpace(cells[1]), cells[2], strings.TrimSpace(cells[3])
		if first == "package" || strings.HasPrefix(first, "---") {
			continue
		}
		var r packageRow
		for _, m := range quoted.FindAllStringSubmatch(first, -1) {
			r.names = append(r.names, strings.TrimSuffix(m[1], "/"))
		}
		if len(r.names) == 0 {
			return nil, fmt.Errorf("table row names no package in backquotes: %.80s", line)
		}
		for _, m := range quoted.FindAllStringSubmatch(desc, -1) {
			for _, n := range r.names {
				if strings.HasPrefix(m[1], n+"/") && filepath.Ext(m[1]) == "" && !slices.Contains(r.names, strings.TrimSuffix(m[1], "/")) {
					r.described = append(r.described, strings.TrimSuffix(m[1], "/"))
				}
			}
		}
		switch {
		case imps == "" || strings.HasPrefix(imps, "everything"):
			r.unchecked = true
			rows = append(rows, r)
			continue
		case imps == "none":
			rows = append(rows, r)
			continue
		}
		if trimmed, ok := strings.CutSuffix(imps, "…"); ok {
			r.loose, imps = true, strings.TrimRight(trimmed, " ,")
		}
		for _, e := range splitTopLevel(imps) {
			m := importEntry.FindStringSubmatch(strings.TrimSpace(e))
			if m == nil {
				return nil, fmt.Errorf("row `%s`: cannot read %q of its imports column (want `pkg` or `pkg` (`a`, `b`))", r.names[0], e)
			}
			l := listedImport{pkg: m[1]}
			// A parenthesis of backquoted names only names the row's
			// packages that import pkg; any other is a remark.
			if m[2] != "" && bareNames.MatchString(m[2]) {
				for _, b := range strings.Split(m[2], ",") {
					l.by = append(l.by, strings.Trim(strings.TrimSpace(b), "`/"))
				}
			}
			r.imports = append(r.imports, l)
		}
		rows = append(rows, r)
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("docs/architecture.md's \"## Packages\" section has no table")
	}
	return rows, nil
}

// splitTopLevel splits s at the commas outside parentheses.
func splitTopLevel(s string) []string {
	var out []string
	depth, start := 0, 0
	for i, c := range s {
		switch c {
		case '(':
			depth++
		case ')':
			depth--
		case ',':
			if depth == 0 {
				out = append(out, s[start:i])
				start = i + 1
			}
		}
	}
	return append(out, s[start:])
}
