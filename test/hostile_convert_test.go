package test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	pqreader "github.com/pqsink/pqsink/reader"
)

// TestHostileLongLine feeds convert a line far over --max-record-bytes: it
// is rejected per --errors by a streaming check, so memory stays near the
// limit, not the line, and the lines around it are converted.
func TestHostileLongLine(t *testing.T) {
	dir := t.TempDir()
	schemaPath := writeTemp(t, "s.schema", []byte(`message m { optional binary s (STRING); }`))
	long := append(append([]byte(`{"s":"`), bytes.Repeat([]byte("x"), 200*mib)...), `"}`...)
	in := append(append([]byte(`{"s":"before"}`+"\n"), long...), "\n"+`{"s":"after"}`+"\n"...)
	inPath := writeTemp(t, "in.jsonl", in)
	in = nil
	rejects := filepath.Join(dir, "rejects.jsonl")
	for _, args := range [][]string{
		{"convert", "--schema", schemaPath, "--max-record-bytes", "16MiB", "--errors", "file:" + rejects, inPath, filepath.Join(dir, "out.parquet")},
		{"convert", "--variant", "--max-record-bytes", "16MiB", "--errors", "file:" + rejects, inPath, filepath.Join(dir, "outv.parquet")},
	} {
		r := runChild(t, nil, args...)
		if r.code != 0 || !strings.Contains(r.stderr, "skipped 1 of 3 lines") {
			t.Fatalf("exit %d: %s", r.code, r.stderr)
		}
		if r.peakRSS > rssBase(t)+6*16*mib {
			t.Errorf("peak RSS %d MiB for a 200 MiB line over a 16 MiB limit", r.peakRSS/mib)
		}
		data, _ := os.ReadFile(rejects)
		var rej struct {
			Line       int64 `json:"line"`
			Error      string
			InputBytes int64 `json:"input_bytes"`
		}
		if err := json.Unmarshal(data, &rej); err != nil || rej.Line != 2 || rej.InputBytes != int64(len(long)) || !strings.Contains(rej.Error, "--max-record-bytes") {
			t.Errorf("rejects: %v %s", err, data)
		}
	}
}

// TestHostileVariantLineMemory converts with --variant single 16 MiB
// lines of many small values: peak RSS, less that of a tiny line, is
// bounded by a multiple of the line. It was about 100× with --shred none
// and 180× with shredding (a 48-byte Variant builder node per value),
// then 30× and 22× (a one-pass builder and direct shredding), and for a
// 50 MiB [1,1,...] 13× and 17× (and 19× before the writer sized a page's
// dictionary indices up front). Since a huge record's columns are grown
// by extrapolation and the leaves of a list share their repetition
// levels, shredding a 50 MiB [1,1,...] takes 12×; here about 13× (16×
// with --shred none, where the one huge Variant value is held by the
// column and twice more by the writer's encoding and compression
// buffers), and 8× for small objects. The bounds hold these with about
// 30% to spare, and --max-record-bytes bounds the line.
func TestHostileVariantLineMemory(t *testing.T) {
	const size = 16 * mib
	list := func(item string) []byte {
		n := size / (len(item) + 1)
		return append(bytes.Repeat([]byte(item+","), n), append([]byte(item), ']')...)
	}
	ints := append([]byte(`[`), list("1")...)
	objects := append([]byte(`[`), list(`{"a":1,"b":"x"}`)...)
	inObject := append(append([]byte(`{"a":[`), list("1")...), '}')
	dir := t.TempDir()
	base := runChild(t, nil, "convert", "--variant", writeTemp(t, "tiny.jsonl", []byte("[1,2]\n")), filepath.Join(dir, "tiny.parquet"))
	if base.code != 0 {
		t.Fatalf("exit %d: %s", base.code, base.stderr)
	}
	for _, tt := range []struct {
		name  string
		line  []byte
		shred string
		bound float64 // of (peak RSS - a tiny line's) / line bytes
	}{
		{"[1,1,...]", ints, "auto", 17},
		{"[1,1,...]", ints, "none", 21},
		{`{"a":[1,1,...]}`, inObject, "auto", 17},
		{`{"a":[1,1,...]}`, inObject, "none", 21},
		{`[{"a":1,"b":"x"},...]`, objects, "auto", 11},
		{`[{"a":1,"b":"x"},...]`, objects, "none", 11},
	} {
		path := writeTemp(t, "in.jsonl", append(tt.line, '\n'))
		r := runChild(t, nil, "convert", "--variant", "--shred", tt.shred, path, filepath.Join(dir, "out.parquet"))
		if r.code != 0 {
			t.Fatalf("exit %d: %s", r.code, r.stderr)
		}
		factor := float64(r.peakRSS-base.peakRSS) / float64(len(tt.line))
		t.Logf("%s, --shred %s: a %d MiB line: peak RSS %d MiB, %.1f× the line over a tiny line's %d MiB", tt.name, tt.shred, len(tt.line)/mib, r.peakRSS/mib, factor, base.peakRSS/mib)
		if factor > tt.bound {
			t.Errorf("%s, --shred %s: peak RSS %d MiB for a %d MiB line: %.1f× the line, want at most %.0f×", tt.name, tt.shred, r.peakRSS/mib, len(tt.line)/mib, factor, tt.bound)
		}
	}
}

// TestHostileRejectsFile checks --errors file:PATH: a PATH that is the
// input is refused before anything is touched, a rejects file is not
// created when the input cannot be opened, and rejected lines keep their
// bytes, invalid UTF-8 included.
func TestHostileRejectsFile(t *testing.T) {
	dir := t.TempDir()
	schemaPath := writeTemp(t, "s.schema", []byte(`message m { required int64 id; }`))
	input := []byte("{\"id\":1}\n{\"id\":\"\xff\xfe\x1b[31m\"}\n{\"id\":3}\n")
	inPath := filepath.Join(dir, "in.jsonl")
	os.WriteFile(inPath, input, 0o644)
	out := filepath.Join(dir, "out.parquet")

	r := runChild(t, nil, "convert", "--schema", schemaPath, "--errors", "file:"+inPath, inPath, out)
	if r.code != 2 || !strings.Contains(r.stderr, "would be truncated") {
		t.Errorf("rejects file = input: exit %d: %s", r.code, r.stderr)
	}
	if got, _ := os.ReadFile(inPath); !bytes.Equal(got, input) {
		t.Fatalf("the input was changed: %q", got)
	}
	r = runChild(t, nil, "convert", "--schema", schemaPath, "--errors", "file:"+schemaPath, inPath, out)
	if r.code != 2 {
		t.Errorf("rejects file = schema: exit %d: %s", r.code, r.stderr)
	}

	rejects := filepath.Join(dir, "rejects.jsonl")
	r = runChild(t, nil, "convert", "--schema", schemaPath, "--errors", "file:"+rejects, filepath.Join(dir, "missing.jsonl"), out)
	if r.code == 0 {
		t.Fatal("missing input: exit 0")
	}
	if _, err := os.Stat(rejects); !os.IsNotExist(err) {
		t.Errorf("rejects file created for a missing input: %v", err)
	}

	r = runChild(t, nil, "convert", "--schema", schemaPath, "--errors", "file:"+rejects, inPath, out)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	data, _ := os.ReadFile(rejects)
	var rej struct {
		Line  int64  `json:"line"`
		Error string `json:"error"`
		B64   string `json:"input_base64"`
	}
	if err := json.Unmarshal(data, &rej); err != nil {
		t.Fatalf("%v: %s", err, data)
	}
	raw, _ := base64.StdEncoding.DecodeString(rej.B64)
	if rej.Line != 2 || string(raw) != "{\"id\":\"\xff\xfe\x1b[31m\"}" {
		t.Errorf("rejected line not byte for byte: %s", data)
	}
	if strings.ContainsRune(rej.Error, 0x1b) || strings.ContainsRune(r.stderr, 0x1b) {
		t.Errorf("an ESC of the input reached a message: %q / %q", rej.Error, r.stderr)
	}
}

// TestHostileEchoes checks that names and values echoed in messages are
// escaped and cut short: an ESC sequence in a key, a 10 MB key, and a
// non-ASCII name in a schema error.
func TestHostileEchoes(t *testing.T) {
	dir := t.TempDir()
	schemaPath := writeTemp(t, "s.schema", []byte(`message m { required int64 id; }`))
	out := filepath.Join(dir, "out.parquet")
	for name, line := range map[string]string{
		"escape key": "{\"id\":1,\"\x1b]0;pwned\x07\x1b[2J\":2}\n",
		"10 MB key":  `{"id":1,"` + strings.Repeat("k", 10<<20) + `":2}` + "\n",
	} {
		t.Run(name, func(t *testing.T) {
			r := runChild(t, nil, "convert", "--schema", schemaPath, writeTemp(t, "in.jsonl", []byte(line)), out)
			if r.code != 1 {
				t.Fatalf("exit %d: %.300s", r.code, r.stderr)
			}
			if strings.ContainsRune(r.stderr, 0x1b) || strings.ContainsRune(r.stderr, 0x07) {
				t.Errorf("control characters reach stderr: %q", r.stderr)
			}
			if len(r.stderr) > 8<<10 {
				t.Errorf("stderr is %d bytes", len(r.stderr))
			}
		})
	}
	bad := writeTemp(t, "u.schema", []byte("message m { required int32 a; }\n ü"))
	r := runChild(t, nil, "convert", "--schema", bad, writeTemp(t, "in.jsonl", []byte(`{"a":1}`)), out)
	if r.code == 0 || !strings.Contains(r.stderr, "'ü'") {
		t.Errorf("schema error: exit %d: %s", r.code, r.stderr)
	}
}

// TestHostileSchemas refuses duplicate sibling names and empty messages
// and groups.
func TestHostileSchemas(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out.parquet")
	in := writeTemp(t, "in.jsonl", []byte(`{"a":1}`+"\n"))
	for text, want := range map[string]string{
		`message m { optional int32 a; optional int32 a; }`:                      `duplicate field name "a"`,
		`message m { optional group g { optional int32 x; optional int32 x; } }`: `duplicate field name "x"`,
		`message m { }`:                      "no fields",
		`message m { optional group g { } }`: "no fields",
	} {
		r := runChild(t, nil, "convert", "--schema", writeTemp(t, "s.schema", []byte(text)), in, out)
		if r.code != 1 || !strings.Contains(r.stderr, want) {
			t.Errorf("%s: exit %d: %s", text, r.code, r.stderr)
		}
		if _, err := os.Stat(out); err == nil {
			t.Fatalf("%s: output published", text)
		}
	}
}

// TestHostileBOMAndBloom checks that a UTF-8 BOM at the start of the input
// is skipped, and that a bloom filter asked for an absurd false-positive
// rate is capped at 1 MiB.
func TestHostileBOMAndBloom(t *testing.T) {
	dir := t.TempDir()
	schemaPath := writeTemp(t, "s.schema", []byte(`message m { required int64 id; }`))
	var in bytes.Buffer
	in.WriteString("\xef\xbb\xbf")
	for i := range 2000 {
		in.WriteString(`{"id":` + string(rune('0'+i%10)) + "}\n")
	}
	out := filepath.Join(dir, "out.parquet")
	r := runChild(t, nil, "convert", "--schema", schemaPath, "--bloom-filter", "id:1e-300", writeTemp(t, "in.jsonl", in.Bytes()), out)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	st, _ := os.Stat(out)
	if st.Size() > 1<<20+64<<10 {
		t.Errorf("output is %d bytes", st.Size())
	}
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	pf, err := pqreader.Open(f, st.Size())
	if err != nil {
		t.Fatal(err)
	}
	if n := pf.Metadata().RowGroups[0].Columns[0].MetaData.BloomFilterLength; n == nil || *n > 1<<20+256 {
		t.Errorf("bloom filter length %v", n)
	}
	if pf.NumRows() != 2000 {
		t.Errorf("%d rows", pf.NumRows())
	}
}

// TestHostileVariantNumbers checks the Variant number rules end to end:
// -0.0 stays a double, a number no type holds exactly is a bad line
// unless --variant-lossy-numbers.
func TestHostileVariantNumbers(t *testing.T) {
	dir := t.TempDir()
	in := writeTemp(t, "in.jsonl", []byte("-0.0\n1e-400\n1234567890123456789012345678901234567890\n"))
	out := filepath.Join(dir, "out.parquet")
	r := runChild(t, nil, "convert", "--variant", "--shred", "none", "--errors", "skip", in, out)
	if r.code != 0 || !strings.Contains(r.stderr, "skipped 2 of 3") {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	r = runChild(t, nil, "inspect", "rows", "--json", out)
	if strings.TrimSpace(r.stdout) != `{"payload":-0.0}` {
		t.Errorf("rows: %s", r.stdout)
	}
	r = runChild(t, nil, "convert", "--variant", "--shred", "none", "--variant-lossy-numbers", in, out)
	if r.code != 0 {
		t.Fatalf("lossy: exit %d: %s", r.code, r.stderr)
	}
	r = runChild(t, nil, "inspect", "rows", "--json", out)
	if got := strings.Fields(r.stdout); len(got) != 3 || got[1] != `{"payload":0}` {
		t.Errorf("lossy rows: %s", r.stdout)
	}
}

// TestHostileConvertSignal interrupts convert reading a slow stdin: it
// stops at once, publishes nothing, removes its temporary file and exits
// non-zero; a temporary file left by a SIGKILL is removed by the next run.
func TestHostileConvertSignal(t *testing.T) {
	dir := t.TempDir()
	schemaPath := writeTemp(t, "s.schema", []byte(`message m { required int64 id; }`))
	out := filepath.Join(dir, "out.parquet")
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGKILL} {
		cmd := exec.Command(hostileBinary(t), "convert", "--schema", schemaPath, "-", out)
		stdin, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		stdin.Write([]byte(`{"id":1}` + "\n" + `{"id":2}` + "\n"))
		// The signal must find the conversion under way, its temporary
		// file created: on a busy machine start-up alone can take longer
		// than any fixed wait.
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			if temps, _ := filepath.Glob(filepath.Join(dir, ".out.parquet.pqsink-tmp-*")); len(temps) > 0 {
				break
			}
			if time.Now().After(deadline) {
				cmd.Process.Kill()
				t.Fatalf("%v: convert created no temporary file in 30s", sig)
			}
		}
		start := time.Now()
		cmd.Process.Signal(sig)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			cmd.Process.Kill()
			t.Fatalf("convert still running 5s after %v", sig)
		}
		stdin.Close()
		t.Logf("%v: exit %d after %v: %s", sig, cmd.ProcessState.ExitCode(), time.Since(start), strings.TrimSpace(stderr.String()))
		if cmd.ProcessState.ExitCode() == 0 {
			t.Errorf("%v: exit 0", sig)
		}
		if _, err := os.Stat(out); err == nil {
			t.Fatalf("%v: output published", sig)
		}
		temps, _ := filepath.Glob(filepath.Join(dir, ".out.parquet.pqsink-tmp-*"))
		if sig == syscall.SIGKILL {
			if len(temps) != 1 {
				t.Fatalf("SIGKILL left %v", temps)
			}
			continue
		}
		if len(temps) != 0 {
			t.Errorf("%v left %v", sig, temps)
		}
	}
	// The next run on the same output removes what the killed run left.
	r := runChild(t, []byte(`{"id":1}`+"\n"), "convert", "--schema", schemaPath, "-", out)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if temps, _ := filepath.Glob(filepath.Join(dir, ".out.parquet.pqsink-tmp-*")); len(temps) != 0 {
		t.Errorf("stale temporary files remain: %v", temps)
	}
}
