package test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pqsink/pqsink/convert"
	"github.com/pqsink/pqsink/internal/testutil"
	"github.com/pqsink/pqsink/internal/testutil/duckdb"
	"github.com/pqsink/pqsink/schema/avro"
)

// avscWrite writes an Avro object container file with avsc (test/avsc,
// installed by scripts/provision.sh): avsc decodes each binary record and
// encodes it again itself, framing blocks of about blockSize bytes.
func avscWrite(t testing.TB, schemaPath string, records [][]byte, out, codec string, blockSize int) {
	t.Helper()
	dir := filepath.Join(testutil.RepoRoot(t), "test", "avsc")
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("avsc harness: node is not installed (%v); install Node.js 20+, then %s", err, testutil.ProvisionHint)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "avsc", "package.json")); err != nil {
		t.Fatalf("avsc harness: avsc is not installed in %s: %s", dir, testutil.ProvisionHint)
	}
	b64 := make([]string, len(records))
	for i, r := range records {
		b64[i] = base64.StdEncoding.EncodeToString(r)
	}
	js, err := json.Marshal(b64)
	if err != nil {
		t.Fatal(err)
	}
	recPath := out + ".records.json"
	if err := os.WriteFile(recPath, js, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(node, "write.mjs", schemaPath, recPath, out, codec, fmt.Sprint(blockSize))
	cmd.Dir = dir
	if outb, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("avsc write.mjs %s: %v\n%s", codec, err, outb)
	}
}

// TestAvroAvscContainers converts container files that avsc, an
// independent Avro implementation, wrote with each codec the
// specification names for it (null, deflate, snappy, zstandard), holding
// every type and logical type, and reads them back with DuckDB.
func TestAvroAvscContainers(t *testing.T) {
	s := allTypesSchema(t)
	schemaPath := filepath.Join(testutil.RepoRoot(t), "schema", "avro", "testdata", "all_types.avsc")
	const rows = 200
	var bins [][]byte
	var wants []map[string]any
	for i := range rows {
		n, w := allTypesRecord(i)
		b, err := s.Codec().BinaryFromNative(nil, n)
		if err != nil {
			t.Fatal(err)
		}
		bins = append(bins, b)
		wants = append(wants, w)
	}
	db := duckdb.Start(t)
	dir := t.TempDir()
	for _, codec := range []string{"null", "deflate", "snappy", "zstandard"} {
		t.Run(codec, func(t *testing.T) {
			in := filepath.Join(dir, codec+".avro")
			out := filepath.Join(dir, codec+".parquet")
			avscWrite(t, schemaPath, bins, in, codec, 2048)
			f, err := os.Open(in)
			if err != nil {
				t.Fatal(err)
			}
			cr, err := avro.NewContainerReader(f)
			if err != nil {
				t.Fatal(err)
			}
			if cr.Codec() != codec {
				t.Errorf("avsc wrote codec %q, want %q", cr.Codec(), codec)
			}
			blocks := 0
			for {
				if _, err := cr.Next(); err == io.EOF {
					break
				} else if err != nil {
					t.Fatal(err)
				}
				blocks++
			}
			f.Close()
			if blocks < 3 {
				t.Errorf("avsc wrote %d blocks, want several", blocks)
			}
			st := convertAvroFile(t, in, out)
			if st.Rows != rows {
				t.Fatalf("converted %d rows, want %d", st.Rows, rows)
			}
			checkAvroMetadata(t, st.Metadata, s)
			res := db.Query(t, fmt.Sprintf(allTypesQuery, duckdb.Quote(out)))
			if len(res.Rows) != rows {
				t.Fatalf("duckdb read %d rows, want %d", len(res.Rows), rows)
			}
			for i, row := range res.Rows {
				got := map[string]any{}
				for j, c := range res.Columns {
					got[c] = row[j]
				}
				if g, w := avroCanonJSON(t, got), avroCanonJSON(t, wants[i]); g != w {
					t.Fatalf("row %d:\nduckdb %s\nwant   %s", i, g, w)
				}
			}
		})
	}
}

// TestAvroContainerCorrupt: a container file cut short anywhere, or with a
// byte changed in its blocks, is an error naming the block and its offset,
// never a panic or a silently short file.
func TestAvroContainerCorrupt(t *testing.T) {
	s := allTypesSchema(t)
	var bins [][]byte
	for i := range 30 {
		n, _ := allTypesRecord(i)
		b, err := s.Codec().BinaryFromNative(nil, n)
		if err != nil {
			t.Fatal(err)
		}
		bins = append(bins, b)
	}
	for _, codec := range []string{"null", "deflate", "snappy", "zstandard"} {
		t.Run(codec, func(t *testing.T) {
			file := containerBytes(t, s.String(), codec, bins, 7)
			run := func(b []byte) error {
				_, err := convert.RunAvro(context.Background(), bytes.NewReader(b), io.Discard, convert.Options{})
				return err
			}
			if err := run(file); err != nil {
				t.Fatalf("the whole file: %v", err)
			}
			headerEnd := bytes.Index(file, []byte("0123456789abcdef")) + 16
			for cut := 1; cut < len(file); cut += 1 + cut/50 {
				err := run(file[:cut])
				if err == nil {
					// Cutting exactly between blocks leaves a shorter valid file.
					continue
				}
				if cut > headerEnd && !strings.Contains(err.Error(), "block ") {
					t.Errorf("cut at %d: %v does not name the block", cut, err)
				}
			}
			// A changed byte in the first block's data: the block's codec
			// or its records fail (or, in an uncompressed block, the
			// values change), always cleanly.
			for i := headerEnd + 4; i < headerEnd+64 && i < len(file); i++ {
				bad := bytes.Clone(file)
				bad[i] ^= 0x5a
				err := run(bad)
				var ce *avro.ContainerError
				var re *convert.RecordError
				if err != nil && !errors.As(err, &ce) && !errors.As(err, &re) {
					t.Errorf("byte %d changed: %v is neither a container nor a record error", i, err)
				}
			}
		})
	}
}

// TestAvroBadUnionIndex: a record whose union branch index is out of
// range is rejected with the field and the byte offset.
func TestAvroBadUnionIndex(t *testing.T) {
	s := avro.MustParse(`{"type":"record","name":"R","fields":[{"name":"u","type":["null","string"]}]}`)
	rec := avro.AppendLong(nil, 5) // branch 5 of 2
	file := containerBytes(t, s.String(), "null", [][]byte{{0}, rec}, 1)
	_, err := convert.RunAvro(context.Background(), bytes.NewReader(file), io.Discard, convert.Options{})
	var re *convert.RecordError
	if !errors.As(err, &re) || re.Block != 1 || !strings.Contains(err.Error(), "union branch 5") || !strings.Contains(err.Error(), "u:") {
		t.Fatalf("got %v, want a record error in block 1 naming field u and union branch 5", err)
	}
}
