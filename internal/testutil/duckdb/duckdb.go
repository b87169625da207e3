// Package duckdb runs DuckDB as an independent Parquet reader for tests.
//
// Start launches test/duckdb/server.mjs (DuckDB through @duckdb/node-api,
// installed by scripts/provision.sh) and talks to it over pipes, one JSON
// line per query. Values arrive converted losslessly as documented in
// server.mjs: numbers as json.Number, 64-bit and wider integers and decimals
// as exact strings, BLOBs as base64, dates and times in DuckDB's text form.
// Float and Blob turn those back into Go values.
package duckdb

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pqsink/pqsink/internal/testutil"
)

// stopTimeout bounds how long Cleanup waits for the server to exit after its
// stdin is closed before killing it.
const stopTimeout = 10 * time.Second

// DB is a running DuckDB server with one in-memory database. Queries are
// serialized; a DB is safe for use by several goroutines.
type DB struct {
	mu     sync.Mutex
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout *bufio.Reader
	stderr *testutil.Tail
	done   chan struct{} // closed when the process has exited
	err    error         // exit status, valid once done is closed
}

// Result is the answer to one query.
type Result struct {
	Columns []string // column names, in order
	Types   []string // DuckDB type of each column, e.g. "DECIMAL(38,10)"
	Rows    [][]any  // one slice per row, values as described in the package doc
}

// Start launches a DuckDB server for the test and stops it when the test
// ends. It fails the test, with a hint on how to provision, if node or the
// npm packages of test/duckdb are missing.
func Start(t testing.TB) *DB {
	t.Helper()
	return startIn(t, filepath.Join(testutil.RepoRoot(t), "test", "duckdb"))
}

func startIn(t testing.TB, dir string) *DB {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("duckdb harness: node is not installed (%v); install Node.js 20+, then %s", err, testutil.ProvisionHint)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@duckdb", "node-api", "package.json")); err != nil {
		t.Fatalf("duckdb harness: @duckdb/node-api is not installed in %s: %s", dir, testutil.ProvisionHint)
	}

	cmd := exec.Command(node, "server.mjs")
	cmd.Dir = dir
	db := &DB{cmd: cmd, stderr: &testutil.Tail{}, done: make(chan struct{})}
	cmd.Stderr = db.stderr
	if db.stdin, err = cmd.StdinPipe(); err != nil {
		t.Fatalf("duckdb harness: %v", err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatalf("duckdb harness: %v", err)
	}
	db.stdout = bufio.NewReader(stdout)
	if err := cmd.Start(); err != nil {
		t.Fatalf("duckdb harness: starting node: %v", err)
	}
	go func() {
		db.err = cmd.Wait()
		close(db.done)
	}()
	t.Cleanup(db.stop)

	// The first answer proves that node, the native binding and DuckDB work.
	if _, err := db.Run("SELECT 1"); err != nil {
		t.Fatalf("duckdb harness: server does not answer: %v", err)
	}
	return db
}

// stop closes the server's stdin, which makes it exit, and kills it if it
// does not.
func (db *DB) stop() {
	db.stdin.Close()
	select {
	case <-db.done:
	case <-time.After(stopTimeout):
		db.cmd.Process.Kill()
		<-db.done
	}
}

// Query runs sql and returns its result, failing the test on any error.
func (db *DB) Query(t testing.TB, sql string) *Result {
	t.Helper()
	res, err := db.Run(sql)
	if err != nil {
		t.Fatalf("duckdb: %s: %v", sql, err)
	}
	return res
}

// ReadParquet returns every row of the Parquet file at path.
func (db *DB) ReadParquet(t testing.TB, path string) *Result {
	t.Helper()
	return db.Query(t, "SELECT * FROM read_parquet("+Quote(path)+")")
}

// Metadata returns DuckDB's parquet_metadata() for the file: one row per
// column chunk, with row group, path, codec, encodings, statistics and
// offsets.
func (db *DB) Metadata(t testing.TB, path string) *Result {
	t.Helper()
	return db.Query(t, "SELECT * FROM parquet_metadata("+Quote(path)+")")
}

// Schema returns DuckDB's parquet_schema() for the file: one row per schema
// element, with name, type, repetition, logical and converted types.
func (db *DB) Schema(t testing.TB, path string) *Result {
	t.Helper()
	return db.Query(t, "SELECT * FROM parquet_schema("+Quote(path)+")")
}

// Run executes sql. An error is either DuckDB's message for a failed query or
// a failure of the server process.
func (db *DB) Run(sql string) (*Result, error) {
	req, err := json.Marshal(struct {
		SQL string `json:"sql"`
	}{sql})
	if err != nil {
		return nil, err
	}
	req = append(req, '\n')

	db.mu.Lock()
	defer db.mu.Unlock()
	if _, err := db.stdin.Write(req); err != nil {
		return nil, db.processError(fmt.Errorf("sending query: %w", err))
	}
	line, err := db.stdout.ReadBytes('\n')
	if err != nil {
		return nil, db.processError(fmt.Errorf("reading answer: %w", err))
	}

	var resp struct {
		Columns []string `json:"columns"`
		Types   []string `json:"types"`
		Rows    [][]any  `json:"rows"`
		Error   *string  `json:"error"`
	}
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.UseNumber()
	if err := dec.Decode(&resp); err != nil {
		return nil, fmt.Errorf("decoding answer %.200q: %w", line, err)
	}
	if resp.Error != nil {
		return nil, errors.New(*resp.Error)
	}
	return &Result{Columns: resp.Columns, Types: resp.Types, Rows: resp.Rows}, nil
}

// processError adds what is known about a server that stopped answering.
func (db *DB) processError(err error) error {
	select {
	case <-db.done:
		return fmt.Errorf("%w (server exited: %v; stderr: %s)", err, db.err, db.stderr)
	case <-time.After(time.Second):
		return fmt.Errorf("%w (stderr: %s)", err, db.stderr)
	}
}

// Column returns the index of the named column, or -1.
func (r *Result) Column(name string) int {
	for i, c := range r.Columns {
		if c == name {
			return i
		}
	}
	return -1
}

// Value returns the value of the named column in row i. It panics if the
// column does not exist or i is out of range, which in a test is a bug in
// the test.
func (r *Result) Value(i int, column string) any {
	c := r.Column(column)
	if c < 0 {
		panic(fmt.Sprintf("duckdb: result has no column %q (columns: %q)", column, r.Columns))
	}
	return r.Rows[i][c]
}

// Quote returns s as an SQL string literal.
func Quote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", "''") + "'"
}

// Float converts a FLOAT or DOUBLE value of a Result to float64, including
// the strings the server uses for NaN, the infinities and negative zero.
func Float(v any) (float64, error) {
	switch v := v.(type) {
	case json.Number:
		return strconv.ParseFloat(string(v), 64)
	case string:
		switch v {
		case "NaN":
			return math.NaN(), nil
		case "Infinity":
			return math.Inf(1), nil
		case "-Infinity":
			return math.Inf(-1), nil
		case "-0":
			return math.Copysign(0, -1), nil
		}
	}
	return 0, fmt.Errorf("duckdb: %T %v is not a floating-point value", v, v)
}

// Blob decodes a BLOB value of a Result.
func Blob(v any) ([]byte, error) {
	s, ok := v.(string)
	if !ok {
		return nil, fmt.Errorf("duckdb: %T %v is not a BLOB value", v, v)
	}
	return base64.StdEncoding.DecodeString(s)
}
