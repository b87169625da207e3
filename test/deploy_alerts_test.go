package test

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/pqsink/pqsink/internal/testutil"
)

// TestDeployAlerts: the shipped Prometheus rules file parses as rule
// groups, every rule has a name, an expression and a valid for:, every
// pqsink metric an expression reads is one connector/ exports, and its
// alerts are the ones docs/operations.md lists.
func TestDeployAlerts(t *testing.T) {
	root := testutil.RepoRoot(t)
	data, err := os.ReadFile(filepath.Join(root, "deploy/prometheus/pqsink-alerts.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Groups []struct {
			Name  string
			Rules []struct {
				Alert, Expr, For string
				Labels           map[string]string
				Annotations      map[string]string
			}
		}
	}
	if err := yaml.Unmarshal(data, &file); err != nil {
		t.Fatalf("the rules file: %v", err)
	}
	if len(file.Groups) == 0 {
		t.Fatal("the rules file has no group")
	}

	var sources []byte
	err = filepath.WalkDir(filepath.Join(root, "connector"), func(f string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(f, ".go") || strings.HasSuffix(f, "_test.go") {
			return err
		}
		src, err := os.ReadFile(f)
		sources = append(sources, src...)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	exported := map[string]bool{}
	for _, m := range regexp.MustCompile(`\bd\("([a-z0-9_]+)"`).FindAllSubmatch(sources, -1) {
		exported["pqsink_"+string(m[1])] = true
	}
	for _, m := range regexp.MustCompile(`(?:NewDesc\(\s*|Name:\s*)"(pqsink_[a-z0-9_]+)"`).FindAllSubmatch(sources, -1) {
		exported[string(m[1])] = true
	}

	var names []string
	for _, g := range file.Groups {
		if g.Name == "" || len(g.Rules) == 0 {
			t.Errorf("group %q: a name and rules, please", g.Name)
		}
		for _, r := range g.Rules {
			names = append(names, r.Alert)
			if r.Alert == "" || r.Expr == "" {
				t.Errorf("rule %q: no alert name or no expr", r.Alert)
			}
			if r.For != "" {
				if _, err := time.ParseDuration(r.For); err != nil {
					t.Errorf("%s: for: %v", r.Alert, err)
				}
			}
			if r.Annotations["summary"] == "" {
				t.Errorf("%s: no summary", r.Alert)
			}
			for _, m := range regexp.MustCompile(`\bpqsink_[a-z0-9_]+\b`).FindAllString(r.Expr, -1) {
				base := m
				for _, suffix := range []string{"_bucket", "_sum", "_count"} {
					if b, ok := strings.CutSuffix(m, suffix); ok && exported[b] {
						base = b
					}
				}
				if !exported[base] {
					t.Errorf("%s reads %s, which connector/ does not export", r.Alert, m)
				}
			}
		}
	}

	doc, err := os.ReadFile(filepath.Join(root, "docs/operations.md"))
	if err != nil {
		t.Fatal(err)
	}
	var documented []string
	for _, m := range regexp.MustCompile(`- alert: (\w+)`).FindAllSubmatch(doc, -1) {
		documented = append(documented, string(m[1]))
	}
	slices.Sort(names)
	slices.Sort(documented)
	if !slices.Equal(names, documented) {
		t.Errorf("the rules file has %v, docs/operations.md lists %v", names, documented)
	}
}
