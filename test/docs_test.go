package test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"

	"github.com/pqsink/pqsink/config"
	"github.com/pqsink/pqsink/internal/testutil"
)

// maxDocLines is the most lines a page under docs/ may have: past it, a
// page is a reference to split by topic, not one a reader gets through.
const maxDocLines = 600

// TestDocsLength: no page under docs/ is longer than maxDocLines lines.
func TestDocsLength(t *testing.T) {
	for _, f := range docFiles(t, false) {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(string(data), "\n"); n > maxDocLines {
			t.Errorf("%s has %d lines, more than %d: split it by topic", relToRoot(t, f), n, maxDocLines)
		}
	}
}

// TestDocsLinkTargets: every relative Markdown link in README.md and
// docs/ points at a file that exists and, when it names an #anchor, at a
// heading of that file (as GitHub makes anchors of headings).
func TestDocsLinkTargets(t *testing.T) {
	anchors := map[string]map[string]bool{} // by absolute path
	anchorsOf := func(path string) map[string]bool {
		if a, ok := anchors[path]; ok {
			return a
		}
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		a := headingAnchors(string(data))
		anchors[path] = a
		return a
	}
	checked := 0
	for _, f := range docFiles(t, true) {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range markdownLinks(string(data)) {
			if strings.Contains(l.target, "://") || strings.HasPrefix(l.target, "mailto:") {
				continue
			}
			file, anchor, _ := strings.Cut(l.target, "#")
			dest := f
			if file != "" {
				dest = filepath.Join(filepath.Dir(f), filepath.FromSlash(file))
				if _, err := os.Stat(dest); err != nil {
					t.Errorf("%s:%d links to %s, which does not exist", relToRoot(t, f), l.line, l.target)
					continue
				}
			}
			checked++
			if anchor == "" || !strings.HasSuffix(dest, ".md") {
				continue
			}
			if !anchorsOf(dest)[anchor] {
				t.Errorf("%s:%d links to %s: %s has no heading #%s", relToRoot(t, f), l.line, l.target, relToRoot(t, dest), anchor)
			}
		}
	}
	if checked < 100 {
		t.Fatalf("found only %d relative links in README.md and docs/: is the link pattern broken?", checked)
	}
}

// TestDocsTablesGuideConfig: the first configuration of the tables guide
// loads, with a table section, as a reader would copy it beside the
// README's examples/events.schema.
func TestDocsTablesGuideConfig(t *testing.T) {
	root := testutil.RepoRoot(t)
	data, err := os.ReadFile(filepath.Join(root, "docs", "tables.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(data), "\n## A first configuration\n")
	if !ok {
		t.Fatal("docs/tables.md has no section \"A first configuration\"")
	}
	m := regexp.MustCompile("(?s)```yaml\n(.*?)```").FindStringSubmatch(after)
	if m == nil {
		t.Fatal("docs/tables.md's first configuration has no yaml block")
	}
	dir := t.TempDir()
	schema, err := os.ReadFile(filepath.Join(root, "examples", "events.schema"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "events.schema"), schema, 0o644); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "pqsink.yaml")
	if err := os.WriteFile(path, []byte(m[1]), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := config.Load(path, func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatalf("docs/tables.md's first configuration does not load: %v", err)
	}
	if c.Table == nil || c.Table.Catalog.Type != "sql" || len(c.Table.PartitionBy) != 1 {
		t.Errorf("docs/tables.md's first configuration: want a table section with a sql catalog and one partition field, got %+v", c.Table)
	}
}

// docFiles lists docs/*.md, and README.md too when withReadme is set.
func docFiles(t *testing.T, withReadme bool) []string {
	t.Helper()
	root := testutil.RepoRoot(t)
	files, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no docs/*.md")
	}
	if withReadme {
		files = append(files, filepath.Join(root, "README.md"))
	}
	return files
}

func relToRoot(t *testing.T, path string) string {
	r, err := filepath.Rel(testutil.RepoRoot(t), path)
	if err != nil {
		return path
	}
	return filepath.ToSlash(r)
}

// link is a Markdown link's target and the line it is on.
type link struct {
	target string
	line   int
}

var (
	linkPattern = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	codeSpan    = regexp.MustCompile("`[^`]*`")
	headingLine = regexp.MustCompile(`^(#{1,6})\s+(.*?)\s*#*\s*$`)
)

// markdownLinks finds the links of a Markdown text outside code blocks
// and code spans (bucket[16](id) in a code span is no link).
func markdownLinks(text string) []link {
	var links []link
	fence := false
	for i, l := range strings.Split(text, "\n") {
		if isFence(l) {
			fence = !fence
			continue
		}
		if fence {
			continue
		}
		for _, m := range linkPattern.FindAllStringSubmatch(codeSpan.ReplaceAllString(l, ""), -1) {
			links = append(links, link{target: m[1], line: i + 1})
		}
	}
	return links
}

// headingAnchors are the anchors GitHub gives a Markdown text's headings:
// the heading's text lower-cased, without the characters other than
// letters, digits, spaces, hyphens and underscores, spaces made hyphens;
// a repeated anchor takes -1, -2… Code blocks hold no heading.
func headingAnchors(text string) map[string]bool {
	anchors := map[string]bool{}
	fence := false
	for l := range strings.SplitSeq(text, "\n") {
		if isFence(l) {
			fence = !fence
			continue
		}
		m := headingLine.FindStringSubmatch(l)
		if fence || m == nil {
			continue
		}
		a := slugify(m[2])
		if anchors[a] {
			n := 1
			for anchors[fmt.Sprintf("%s-%d", a, n)] {
				n++
			}
			a = fmt.Sprintf("%s-%d", a, n)
		}
		anchors[a] = true
	}
	return anchors
}

// slugify makes a heading's text its anchor. A link in the heading keeps
// only its text.
func slugify(heading string) string {
	heading = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`).ReplaceAllString(heading, "$1")
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

func isFence(line string) bool {
	l := strings.TrimLeft(line, " ")
	return strings.HasPrefix(l, "```") || strings.HasPrefix(l, "~~~")
}

// TestSlugify holds the anchor rule to GitHub's on the headings the docs
// link to.
func TestSlugify(t *testing.T) {
	for _, c := range []struct{ heading, want string }{
		{"Package `table`", "package-table"},
		{"What `pqsink run` does with a table", "what-pqsink-run-does-with-a-table"},
		{"REST catalogs that need AWS SigV4", "rest-catalogs-that-need-aws-sigv4"},
		{"Coming from Kafka Connect's S3 sink", "coming-from-kafka-connects-s3-sink"},
		{"Start-up", "start-up"},
		{"`table.maintenance` keys", "tablemaintenance-keys"},
		{"Read [the docs](x.md) now", "read-the-docs-now"},
	} {
		if got := slugify(c.heading); got != c.want {
			t.Errorf("slugify(%q) = %q, want %q", c.heading, got, c.want)
		}
	}
	got := headingAnchors("# A\n```\n# B\n```\n## A\n### A\n")
	for _, want := range []string{"a", "a-1", "a-2"} {
		if !got[want] {
			t.Errorf("headingAnchors: no %s in %v", want, got)
		}
	}
	if got["b"] {
		t.Error("headingAnchors: a line in a code block is no heading")
	}
}
