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
