package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pqsink/pqsink/internal/testutil/minio"
	"github.com/pqsink/pqsink/objstore"
)

// asMainEnv makes the test binary run the command's main instead of the
// tests, so that a test can see what the process writes to its own stderr
// (an SDK's logger does not go through run's writers).
const asMainEnv = "PQSINK_TEST_AS_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(asMainEnv) == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// pqsink runs the CLI in-process and returns its exit status and output.
func pqsink(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(context.Background(), args, strings.NewReader(stdin), &out, &errb)
	return code, out.String(), errb.String()
}

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

const testSchema = `message m {
  required int64 id;
  optional binary name (STRING);
  optional int64 ts (TIMESTAMP(MILLIS,true));
  optional int64 price (DECIMAL(10,2));
  optional group tags (LIST) { repeated group list { optional binary element (STRING); } }
}`

const testInput = `{"id":1,"name":"a","ts":"2024-05-06T07:08:09.123Z","price":"12.50","tags":["x","y"]}
{"id":2,"name":null,"ts":1714979289123,"price":3,"tags":[]}

{"id":3,"tags":null}
`

func TestConvertThenInspect(t *testing.T) {
	dir := t.TempDir()
	schemaFile := writeFile(t, dir, "m.schema", testSchema)
	in := writeFile(t, dir, "in.jsonl", testInput)
	out := filepath.Join(dir, "out.parquet")
	// Flags after the positional arguments work too.
	if code, _, stderr := pqsink(t, "", "convert", in, out, "--schema", schemaFile, "--codec", "zstd:3", "--page-version", "2", "--bloom-filter", "name"); code != 0 {
		t.Fatalf("convert: exit %d: %s", code, stderr)
	}

	code, stdout, stderr := pqsink(t, "", "inspect", "rows", "--json", out)
	if code != 0 {
		t.Fatalf("inspect rows: exit %d: %s", code, stderr)
	}
	want := []string{
		`{"id":1,"name":"a","ts":"2024-05-06T07:08:09.123Z","price":"12.50","tags":["x","y"]}`,
		`{"id":2,"name":null,"ts":"2024-05-06T07:08:09.123Z","price":"3.00","tags":[]}`,
		`{"id":3,"name":null,"ts":null,"price":null,"tags":null}`,
	}
	if got := strings.Split(strings.TrimSpace(stdout), "\n"); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("inspect rows --json:\n got %s\nwant %s", strings.Join(got, "\n    "), strings.Join(want, "\n     "))
	}
	code, stdout, _ = pqsink(t, "", "inspect", "rows", "--columns", "id,tags", "--limit", "1", "--json", out)
	if code != 0 || strings.TrimSpace(stdout) != `{"id":1,"tags":["x","y"]}` {
		t.Errorf("inspect rows --columns --limit: exit %d, %q", code, stdout)
	}

	code, stdout, _ = pqsink(t, "", "inspect", "meta", out)
	for _, s := range []string{"rows:        3 in 1 row groups", "price: INT64 DECIMAL(10,2)", "max \"12.50\"", "bloom filter", "column index", "DATA_PAGE_V2", "ZSTD"} {
		if code != 0 || !strings.Contains(stdout, s) {
			t.Errorf("inspect meta lacks %q (exit %d):\n%s", s, code, stdout)
		}
	}
	code, stdout, _ = pqsink(t, "", "inspect", "schema", out)
	if code != 0 || !strings.Contains(stdout, "optional int64 price (DECIMAL(10,2));") {
		t.Errorf("inspect schema: exit %d:\n%s", code, stdout)
	}
}

// TestConvertAllRejected: a convert that rejected every line it read
// exits with status 3, not 0, so that a script can tell an empty output
// from a good one; the output is still a valid file, with no rows.
func TestConvertAllRejected(t *testing.T) {
	dir := t.TempDir()
	schemaFile := writeFile(t, dir, "m.schema", testSchema)
	in := writeFile(t, dir, "in.jsonl", "{\"id\":\"one\"}\n\n{\"id\":\"two\"}\n")
	out := filepath.Join(dir, "out.parquet")
	for _, errs := range []string{"skip", "file:" + filepath.Join(dir, "rejects.jsonl")} {
		code, _, stderr := pqsink(t, "", "convert", "--quiet", "--schema", schemaFile, "--errors", errs, in, out)
		if code != 3 || !strings.Contains(stderr, "every one of the 2 lines") {
			t.Errorf("--errors %s: exit %d, stderr %q; want 3", errs, code, stderr)
		}
		if code, stdout, _ := pqsink(t, "", "inspect", "schema", out); code != 0 || !strings.Contains(stdout, "id") {
			t.Errorf("the output of an all-rejected convert: inspect exit %d", code)
		}
	}
}

func TestConvertErrors(t *testing.T) {
	dir := t.TempDir()
	schemaFile := writeFile(t, dir, "m.schema", testSchema)
	in := writeFile(t, dir, "in.jsonl", "{\"id\":1}\n{\"id\":\"two\"}\n{\"id\":3,\"price\":1.234}\n{\"id\":4}\n")
	out := filepath.Join(dir, "out.parquet")

	code, _, stderr := pqsink(t, "", "convert", "--schema", schemaFile, in, out)
	if code != 1 || !strings.Contains(stderr, "line 2") || !strings.Contains(stderr, "id") {
		t.Errorf("bad line: exit %d, stderr %q; want exit 1 naming line 2 and field id", code, stderr)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("a failed convert left %s behind (%v)", out, err)
	}

	rejects := filepath.Join(dir, "rejects.jsonl")
	code, _, stderr = pqsink(t, "", "convert", "--schema", schemaFile, "--errors", "file:"+rejects, in, out)
	if code != 0 || !strings.Contains(stderr, "skipped 2 of 4 lines") {
		t.Fatalf("--errors file: exit %d, stderr %q", code, stderr)
	}
	data, err := os.ReadFile(rejects)
	if err != nil {
		t.Fatal(err)
	}
	var lines []struct {
		Line  int    `json:"line"`
		Error string `json:"error"`
		Input string `json:"input"`
	}
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var r struct {
			Line  int    `json:"line"`
			Error string `json:"error"`
			Input string `json:"input"`
		}
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatalf("reject line %q: %v", l, err)
		}
		lines = append(lines, r)
	}
	if len(lines) != 2 || lines[0].Line != 2 || lines[1].Line != 3 || !strings.Contains(lines[1].Error, "price") {
		t.Errorf("rejects = %+v", lines)
	}
	_, stdout, _ := pqsink(t, "", "inspect", "rows", "--json", "--columns", "id", out)
	if strings.TrimSpace(stdout) != "{\"id\":1}\n{\"id\":4}" {
		t.Errorf("rows kept = %q", stdout)
	}

	for _, args := range [][]string{
		{"convert", in, out},                                           // no schema
		{"convert", "--schema", schemaFile, in},                        // no output
		{"convert", "--schema", schemaFile, "--codec", "zip", in, out}, // bad codec
		{"convert", "--schema", schemaFile, "--errors", "maybe", in, out},
		{"inspect", "nothing", out},
		{"frobnicate"},
	} {
		if code, _, stderr := pqsink(t, "", args...); code != 2 || stderr == "" {
			t.Errorf("%v: exit %d, stderr %q; want a usage error (2)", args, code, stderr)
		}
	}
}

func TestConvertStdinStdout(t *testing.T) {
	dir := t.TempDir()
	schemaFile := writeFile(t, dir, "m.schema", testSchema)
	code, stdout, stderr := pqsink(t, testInput, "convert", "--quiet", "--schema", schemaFile, "-", "-")
	if code != 0 || !strings.HasPrefix(stdout, "PAR1") || !strings.HasSuffix(stdout, "PAR1") || stderr != "" {
		t.Fatalf("convert - -: exit %d, %d bytes out, stderr %q", code, len(stdout), stderr)
	}
}

// landedFile converts the test input and puts the file into a new bucket
// of a MinIO started for the test, as landing/out.parquet.
func landedFile(t *testing.T) (srv *minio.Server, bucket string) {
	t.Helper()
	srv = minio.Start(t)
	bucket = srv.NewBucket(t)
	dir := t.TempDir()
	schemaFile := writeFile(t, dir, "m.schema", testSchema)
	in := writeFile(t, dir, "in.jsonl", testInput)
	out := filepath.Join(dir, "out.parquet")
	if code, _, stderr := pqsink(t, "", "convert", "--schema", schemaFile, in, out); code != 0 {
		t.Fatal(stderr)
	}
	ctx := context.Background()
	store, err := objstore.Open(ctx, "s3://"+bucket+"?endpoint="+srv.Endpoint+"&path_style=true&region="+srv.Region,
		objstore.StaticCredentials(srv.AccessKey, srv.SecretKey, ""))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := objstore.Put(ctx, store, "landing/out.parquet", f); err != nil {
		t.Fatal(err)
	}
	return srv, bucket
}

// TestInspectS3 reads a file straight from a real S3 API (MinIO), with
// the AWS default credential chain.
func TestInspectS3(t *testing.T) {
	srv, bucket := landedFile(t)
	t.Setenv("AWS_ACCESS_KEY_ID", srv.AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", srv.SecretKey)
	url := "s3://" + bucket + "/landing/out.parquet?endpoint=" + srv.Endpoint + "&path_style=true&region=" + srv.Region
	code, stdout, stderr := pqsink(t, "", "inspect", "rows", "--json", "--columns", "id", url)
	if code != 0 || strings.TrimSpace(stdout) != "{\"id\":1}\n{\"id\":2}\n{\"id\":3}" {
		t.Fatalf("inspect rows %s: exit %d, %q, %s", url, code, stdout, stderr)
	}
	code, _, stderr = pqsink(t, "", "inspect", "meta", "s3://"+bucket+"/missing.parquet?endpoint="+srv.Endpoint+"&path_style=true&region="+srv.Region)
	if code != 1 || !strings.Contains(stderr, "missing.parquet") {
		t.Errorf("missing object: exit %d, %q", code, stderr)
	}
}

// TestConvertLossyNumbers: 1e-400 in a DOUBLE column is a rejected line,
// as it is in a VARIANT, unless --lossy-numbers.
func TestConvertLossyNumbers(t *testing.T) {
	dir := t.TempDir()
	schemaFile := writeFile(t, dir, "m.schema", "message m { required int64 id; required double x; }")
	in := writeFile(t, dir, "in.jsonl", "{\"id\":1,\"x\":1e-400}\n")
	out := filepath.Join(dir, "out.parquet")
	for _, args := range [][]string{{"--schema", schemaFile}, {"--variant"}} {
		code, _, stderr := pqsink(t, "", append(append([]string{"convert", "--quiet"}, args...), in, out)...)
		if code != 1 || !strings.Contains(stderr, "1e-400") {
			t.Errorf("%v: exit %d, stderr %q; want the line rejected", args, code, stderr)
		}
		code, _, stderr = pqsink(t, "", append(append([]string{"convert", "--quiet", "--lossy-numbers"}, args...), in, out)...)
		if code != 0 {
			t.Errorf("%v --lossy-numbers: exit %d, stderr %q", args, code, stderr)
		}
	}
}

// TestInspectS3EnvKeys runs inspect as its own process with the keys of the
// README's examples, S3_ACCESS_KEY and S3_SECRET_KEY, and nothing of the AWS
// default chain: it signs with them, without probing EC2 instance metadata
// or printing the SDK's warning, and refuses one without the other.
func TestInspectS3EnvKeys(t *testing.T) {
	srv, bucket := landedFile(t)
	dir := t.TempDir()
	// No region in the URL, as in the README's example.
	url := "s3://" + bucket + "/landing/out.parquet?endpoint=" + srv.Endpoint + "&path_style=true"
	for _, tc := range []struct {
		name           string
		env            []string
		code           int
		stdout, stderr string
	}{
		{"both keys", []string{"S3_ACCESS_KEY=" + srv.AccessKey, "S3_SECRET_KEY=" + srv.SecretKey},
			0, "{\"id\":1}\n{\"id\":2}\n{\"id\":3}\n", ""},
		{"access key alone", []string{"S3_ACCESS_KEY=" + srv.AccessKey},
			2, "", "pqsink inspect: S3_ACCESS_KEY is set but S3_SECRET_KEY is not: set both, or neither for the AWS default credential chain\n"},
		{"secret key alone", []string{"S3_SECRET_KEY=" + srv.SecretKey},
			2, "", "pqsink inspect: S3_SECRET_KEY is set but S3_ACCESS_KEY is not: set both, or neither for the AWS default credential chain\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "inspect", "rows", "--json", "--columns", "id", url)
			cmd.Env = append(cleanAWSEnv(dir), asMainEnv+"=1")
			cmd.Env = append(cmd.Env, tc.env...)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			code := cmd.ProcessState.ExitCode()
			if err != nil && code <= 0 {
				t.Fatal(err)
			}
			if code != tc.code || stdout.String() != tc.stdout || stderr.String() != tc.stderr {
				t.Errorf("exit %d, stdout %q, stderr %q; want exit %d, stdout %q, stderr %q",
					code, stdout.String(), stderr.String(), tc.code, tc.stdout, tc.stderr)
			}
		})
	}
}

// cleanAWSEnv is the test's environment without anything the AWS default
// credential chain reads, so that only instance metadata would be left.
func cleanAWSEnv(dir string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "AWS_") && !strings.HasPrefix(kv, "S3_") {
			env = append(env, kv)
		}
	}
	return append(env,
		"AWS_SHARED_CREDENTIALS_FILE="+filepath.Join(dir, "no-credentials"),
		"AWS_CONFIG_FILE="+filepath.Join(dir, "no-config"))
}
