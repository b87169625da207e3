package test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/pqsink/pqsink/internal/testutil"
)

// TestReadmeExamples runs the README's examples that need no broker or
// store, as a new user would, and compares what they print with what the
// README shows: the record of the kcat example fits examples/events.schema,
// inspect rows prints it as the README shows (less the _kafka envelope that
// only the sink adds), and convert's error is the README's, word for word.
func TestReadmeExamples(t *testing.T) {
	root := testutil.RepoRoot(t)
	data, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	readme := string(data)
	bin := pqsinkBinary(t)
	schemaFile := filepath.Join(root, "examples", "events.schema")
	dir := t.TempDir()
	pqsink := func(stdin string, args ...string) (string, string, int) {
		t.Helper()
		cmd := exec.Command(bin, args...)
		cmd.Dir = root
		cmd.Stdin = strings.NewReader(stdin)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		if cmd.ProcessState == nil {
			t.Fatalf("pqsink %q: %v", args, err)
		}
		return stdout.String(), stderr.String(), cmd.ProcessState.ExitCode()
	}

	m := regexp.MustCompile(`(?m)^printf 'k1\\t(\{.*\})\\n' \|$`).FindStringSubmatch(readme)
	if m == nil {
		t.Fatal("README.md has no kcat example of the form printf 'k1\\t{...}\\n' |")
	}
	record := m[1]
	out := filepath.Join(dir, "record.parquet")
	if _, stderr, code := pqsink(record+"\n", "convert", "--quiet", "--schema", schemaFile, "-", out); code != 0 {
		t.Fatalf("the README's kcat record does not fit examples/events.schema: %s", stderr)
	}
	row := regexp.MustCompile(`(?m)^0: \{"id":1,.*\}$`).FindString(readme)
	if row == "" {
		t.Fatal("README.md shows no inspect rows output (0: {\"id\":1,...})")
	}
	want := regexp.MustCompile(`,"_kafka":\{.*\}\}$`).ReplaceAllString(row, "}") + "\n"
	if got, stderr, code := pqsink("", "inspect", "rows", out); code != 0 || got != want {
		t.Errorf("inspect rows of the README's record: exit %d, %s\n got %q\nwant %q (the README's, without _kafka)", code, stderr, got, want)
	}

	m = regexp.MustCompile(`(?m)^\$ printf '(.*)\\n' \| pqsink (convert .*)\n(pqsink convert: .*)$`).FindStringSubmatch(readme)
	if m == nil {
		t.Fatal("README.md has no convert error example of the form $ printf '...\\n' | pqsink convert ...")
	}
	args := strings.Fields(m[2])
	for i, a := range args {
		if a == "out.parquet" {
			args[i] = filepath.Join(dir, "out.parquet")
		}
	}
	if _, stderr, code := pqsink(m[1]+"\n", args...); code != 1 || stderr != m[3]+"\n" {
		t.Errorf("pqsink %s: exit %d, stderr %q; the README shows exit 1 and %q", m[2], code, stderr, m[3])
	}
}
