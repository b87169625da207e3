package sinkbench

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pqsink/pqsink/reader"
)

// TestBenchReportMatchesOutput runs a small bench with the broker in this
// process and checks the report against what landed: the records in the
// files' footers, the files and their bytes.
func TestBenchReportMatchesOutput(t *testing.T) {
	dir := t.TempDir()
	rep, err := Run(context.Background(), Options{
		Records: 20000, Partitions: 3, InProcessBroker: true, Envelope: true,
		Store: "file://" + dir, KeepOutput: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	var files, rows, size int64
	err = filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".parquet") {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		f, err := reader.Open(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			return err
		}
		files++
		rows += f.NumRows()
		size += int64(len(data))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Records != 20000 || rows != rep.Records || files != rep.Files || size != rep.OutputBytes {
		t.Errorf("report: %d records, %d files, %d bytes; landed: %d rows, %d files, %d bytes", rep.Records, rep.Files, rep.OutputBytes, rows, files, size)
	}
	if rep.RecordsPerSec <= 0 || rep.PeakRSS <= 0 || rep.InputBytes < 20000*150 || rep.BytesPerRecord <= 0 {
		t.Errorf("implausible report:\n%s", rep)
	}
	var out bytes.Buffer
	io.WriteString(&out, rep.String())
	for _, want := range []string{"records/s", "peak RSS", "bytes/record"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the report lacks %q:\n%s", want, out.String())
		}
	}
}

// TestBenchTable runs a small bench into an Iceberg table on SQLite: the
// run ends with every record in the table, and the report says so.
func TestBenchTable(t *testing.T) {
	dir := t.TempDir()
	rep, err := Run(context.Background(), Options{
		Records: 20000, Partitions: 3, InProcessBroker: true, Envelope: true,
		Store: "file://" + dir, KeepOutput: true, Table: "sqlite",
	})
	if err != nil {
		t.Fatal(err)
	}
	st := rep.Stats
	if rep.Records != 20000 || st.TableCommits == 0 || st.TableFilesAppended != rep.Files || st.TablePendingRecords != 0 || st.TableCommitTime <= 0 || st.TableCommitMax > st.TableCommitTime {
		t.Errorf("report:\n%s\nstats %+v", rep, st)
	}
	if !strings.Contains(rep.String(), "records not in the table") {
		t.Errorf("the report has no table line:\n%s", rep)
	}
	// The files are the table's: under bench/events/data/.
	matches, _ := filepath.Glob(filepath.Join(dir, "bench", "events", "data", "*", "*.parquet"))
	if int64(len(matches)) != rep.Files {
		t.Errorf("%d files under the table's data folder, the report says %d", len(matches), rep.Files)
	}
	if _, err := Run(context.Background(), Options{Records: 1, InProcessBroker: true, Table: "mysql://x"}); err == nil || !strings.Contains(err.Error(), "want sqlite or a postgres") {
		t.Errorf("an unknown catalog: %v", err)
	}
}

// TestBenchProtobuf: with format protobuf the events go in as Protobuf
// messages (smaller than their JSON) and land as the same columns as
// the JSON events: a row of each reads back the same.
func TestBenchProtobuf(t *testing.T) {
	rows := map[string]string{}
	for _, format := range []string{"json", "protobuf"} {
		dir := t.TempDir()
		rep, err := Run(context.Background(), Options{
			Records: 3000, Partitions: 1, InProcessBroker: true, Envelope: false, Format: format,
			Store: "file://" + dir, KeepOutput: true,
		})
		if err != nil {
			t.Fatalf("%s: %v", format, err)
		}
		if rep.Records != 3000 {
			t.Fatalf("%s: %d records", format, rep.Records)
		}
		if format == "protobuf" && (rep.InputBytes >= 3000*150 || !strings.Contains(rep.String(), "MB of Protobuf")) {
			t.Errorf("protobuf input: %d bytes for 3000 events; report:\n%s", rep.InputBytes, rep)
		}
		err = filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".parquet") {
				return err
			}
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			f, err := reader.Open(bytes.NewReader(data), int64(len(data)))
			if err != nil {
				return err
			}
			rs, err := f.Rows()
			if err != nil {
				return err
			}
			v, err := rs.Next()
			if err != nil {
				return err
			}
			rows[format] = string(v.AppendJSON(nil))
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	// The Timestamp is TIMESTAMP(NANOS), the JSON schema's ts MICROS: the
	// rows agree but for the digits of ts.
	j, p := rows["json"], rows["protobuf"]
	if j == "" || p == "" || strings.Replace(p, `000Z"`, `Z"`, 1) != j {
		t.Errorf("first rows differ:\njson     %s\nprotobuf %s", j, p)
	}
}
