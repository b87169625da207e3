package test

import (
	"bytes"
	"encoding/binary"
	"io"
	"math/big"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/pqsink/pqsink/meta"
	pqreader "github.com/pqsink/pqsink/reader"
)

// mib is a byte count in MiB, for bounds on peak RSS.
const mib = 1 << 20

// rssBase is what a pqsink process holds before reading anything: the Go
// runtime, the binary's pages, what its libraries' package
// initialization allocates (iceberg-go's substrait extensions alone
// allocate about 32 MB). It is measured, as the peak RSS of `pqsink
// version`, once per test binary. Bounds below are this plus a multiple
// of the budget the read was given.
func rssBase(t testing.TB) int64 {
	t.Helper()
	rssBaseOnce.Do(func() {
		r := runChild(t, nil, "version")
		if r.code != 0 {
			t.Fatalf("pqsink version: exit %d: %s", r.code, r.stderr)
		}
		rssBaseOnce.rss = r.peakRSS
	})
	if rssBaseOnce.rss == 0 {
		t.Fatal("the RSS of pqsink at rest could not be measured")
	}
	return rssBaseOnce.rss
}

// rssBaseOnce holds rssBase's measurement.
var rssBaseOnce struct {
	sync.Once
	rss int64
}

// budgetRefusal checks that a child stopped on its memory budget: exit 1,
// an error that says so and names the option, and never "corrupt".
func budgetRefusal(t *testing.T, r childResult) {
	t.Helper()
	if r.code != 1 || !strings.Contains(r.stderr, "memory budget exceeded") || !strings.Contains(r.stderr, "--max-memory") {
		t.Fatalf("want a memory budget error naming --max-memory, got exit %d: %s", r.code, r.stderr)
	}
	if strings.Contains(r.stderr, "corrupt") {
		t.Errorf("a budget refusal calls the file corrupt: %s", r.stderr)
	}
}

// listSchema is a LIST of optional int32, whose null elements cost two
// bits of run-length encoded levels each, and a bit each once read (a
// record holds a list of scalars packed).
const listSchema = `message m {
  optional group l (LIST) {
    repeated group list {
      optional int32 element;
    }
  }
}`

// stringListSchema is a LIST of strings, whose empty elements cost four
// bytes each once read.
const stringListSchema = `message m {
  optional group l (LIST) {
    repeated group list {
      optional binary element (STRING);
    }
  }
}`

// nullListPages returns pages pages of perPage null elements each, all of
// one record: the record spans every page.
func nullListPages(pages, perPage int) []forgedPage {
	return listPages(pages, perPage, 2, nil)
}

// listPages returns pages pages of perPage list elements of definition
// level def and PLAIN values, all of one record.
func listPages(pages, perPage int, def uint64, values []byte) []forgedPage {
	var out []forgedPage
	for i := range pages {
		rep := rleRun(perPage, 1, 1)
		if i == 0 {
			rep = append(rleRun(1, 0, 1), rleRun(perPage-1, 1, 1)...)
		}
		out = append(out, forgedPage{n: int32(perPage), rep: rep, def: rleRun(perPage, def, 2), values: values, enc: meta.EncodingPlain})
	}
	return out
}

// TestHostileRecordAcrossPages reads one record of list elements spread
// over pages of 4 Mi levels each, in files of a few kilobytes. Empty
// strings, four bytes each once read, are refused under a 64 MiB budget,
// with RSS bounded by the budget, not by the 12 Mi elements the file
// declares. Null elements, a bit each, are read under it (they once took
// 6 GB, then a refusal).
func TestHostileRecordAcrossPages(t *testing.T) {
	const perPage = 4 << 20
	data := forge(t, stringListSchema, 1, []forgedColumn{{codec: meta.CodecZstd, pages: listPages(3, perPage, 3, make([]byte, 4*perPage))}})
	if len(data) > 16<<10 {
		t.Fatalf("forged file is %d bytes", len(data))
	}
	r := runChild(t, nil, "inspect", "rows", "--max-memory", "64MiB", writeTemp(t, "strings.parquet", data))
	budgetRefusal(t, r)
	if r.peakRSS > rssBase(t)+4*64*mib {
		t.Errorf("peak RSS %d MiB for a 64 MiB budget", r.peakRSS/mib)
	}
	data = forge(t, listSchema, 1, []forgedColumn{{codec: meta.CodecUncompressed, pages: nullListPages(3, perPage)}})
	if len(data) > 400 {
		t.Fatalf("forged file is %d bytes", len(data))
	}
	r = runChild(t, nil, "inspect", "rows", "--json", "--max-memory", "64MiB", writeTemp(t, "list.parquet", data))
	if r.code != 0 || strings.Count(r.stdout, "null") != 3*perPage {
		t.Fatalf("exit %d, %d nulls: %s", r.code, strings.Count(r.stdout, "null"), r.stderr)
	}
	if r.peakRSS > rssBase(t)+4*64*mib {
		t.Errorf("peak RSS %d MiB for a 64 MiB budget", r.peakRSS/mib)
	}
	// The same shape at a size the budget holds is read: a budget, not a
	// cap on what a record may be.
	small := forge(t, stringListSchema, 1, []forgedColumn{{codec: meta.CodecZstd, pages: listPages(3, 50_000, 3, make([]byte, 4*50_000))}})
	r = runChild(t, nil, "inspect", "rows", "--json", "--max-memory", "64MiB", writeTemp(t, "small.parquet", small))
	if r.code != 0 || strings.Count(r.stdout, `""`) != 150_000 {
		t.Fatalf("exit %d, %d empty strings: %s", r.code, strings.Count(r.stdout, `""`), r.stderr)
	}
}

// TestHostileColumnsTogether forges 16 columns whose zstd pages each
// decompress to 24 MiB of padding: the budget counts all projected columns
// together, so a read under 128 MiB stops at the sixth column.
func TestHostileColumnsTogether(t *testing.T) {
	var text strings.Builder
	text.WriteString("message m {\n")
	var cols []forgedColumn
	for i := range 16 {
		text.WriteString("  optional int32 c" + string(rune('a'+i)) + ";\n")
		padded := make([]byte, 24*mib)
		def := rleRun(1, 0, 1)
		cols = append(cols, forgedColumn{codec: meta.CodecZstd, pages: []forgedPage{{n: 1, def: def, values: padded[:len(padded)-len(def)-4], enc: meta.EncodingPlain}}})
	}
	text.WriteString("}")
	data := forge(t, text.String(), 1, cols)
	t.Logf("forged file: %d bytes", len(data))
	path := writeTemp(t, "cols.parquet", data)
	r := runChild(t, nil, "inspect", "rows", "--max-memory", "128MiB", path)
	budgetRefusal(t, r)
	if r.peakRSS > rssBase(t)+3*128*mib {
		t.Errorf("peak RSS %d MiB for a 128 MiB budget", r.peakRSS/mib)
	}
	// One column at a time fits.
	r = runChild(t, nil, "inspect", "rows", "--columns", "cc", "--max-memory", "128MiB", path)
	if r.code != 0 || !strings.Contains(r.stdout, `{"cc":null}`) {
		t.Fatalf("one column: exit %d: %s%s", r.code, r.stdout, r.stderr)
	}
}

// TestHostileCompressionBomb forges a page of a few kilobytes of zstd that
// declares 2 GiB uncompressed, and one that truly decompresses to 200 MiB:
// both are refused by the budget before a byte is decompressed.
func TestHostileCompressionBomb(t *testing.T) {
	for _, tc := range []struct {
		name string
		size int32
	}{
		{"declared 2 GiB", 1<<31 - 1},
		{"real 200 MiB", 200 * mib},
	} {
		t.Run(tc.name, func(t *testing.T) {
			def := rleRun(1, 0, 1)
			pad := make([]byte, 200*mib-len(def)-4)
			data := forge(t, `message m { optional int32 x; }`, 1, []forgedColumn{{codec: meta.CodecZstd,
				pages: []forgedPage{{n: 1, def: def, values: pad, enc: meta.EncodingPlain, uncompressed: tc.size}}}})
			t.Logf("forged file: %d bytes", len(data))
			r := runChild(t, nil, "inspect", "rows", "--max-memory", "64MiB", writeTemp(t, "bomb.parquet", data))
			budgetRefusal(t, r)
			if r.peakRSS > rssBase(t)+2*64*mib {
				t.Errorf("peak RSS %d MiB for a 64 MiB budget", r.peakRSS/mib)
			}
		})
	}
}

// TestHostileDecimal forges DECIMAL values far longer than their
// precision: an 8 MB value of DECIMAL(9,2), which once took 17 s to
// format, and one of a precision no system computes with. Both are
// refused at once as values their column cannot hold.
func TestHostileDecimal(t *testing.T) {
	for _, tc := range []struct {
		name, typ, want string
	}{
		{"over precision", "DECIMAL(9,2)", "exceeds precision 9"},
		{"huge precision", "DECIMAL(2000000000,0)", "more than the 4096 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := bytes.Repeat([]byte{0x5a}, 8<<20)
			values := binary.LittleEndian.AppendUint32(nil, uint32(len(v)))
			values = append(values, v...)
			data := forge(t, `message m { required binary d (`+tc.typ+`); }`, 1, []forgedColumn{{codec: meta.CodecZstd,
				pages: []forgedPage{{n: 1, values: values, enc: meta.EncodingPlain}}}})
			r := runChild(t, nil, "inspect", "rows", writeTemp(t, "dec.parquet", data))
			if r.code != 1 || !strings.Contains(r.stderr, tc.want) {
				t.Fatalf("exit %d: %s", r.code, r.stderr)
			}
			if r.elapsed > 20*time.Second {
				t.Errorf("took %v", r.elapsed)
			}
		})
	}
	// A value within its precision reads, with sign-extension padding.
	// -123456789 in two's complement: ~(123456789-1).
	y := new(big.Int).Sub(big.NewInt(123456789), big.NewInt(1)).FillBytes(make([]byte, 16))
	for i := range y {
		y[i] = ^y[i]
	}
	values := binary.LittleEndian.AppendUint32(nil, uint32(len(y)))
	values = append(values, y...)
	data := forge(t, `message m { required binary d (DECIMAL(9,2)); }`, 1, []forgedColumn{{codec: meta.CodecUncompressed,
		pages: []forgedPage{{n: 1, values: values, enc: meta.EncodingPlain}}}})
	r := runChild(t, nil, "inspect", "rows", "--json", writeTemp(t, "ok.parquet", data))
	if r.code != 0 || strings.TrimSpace(r.stdout) != `{"d":"-1234567.89"}` {
		t.Fatalf("exit %d: %s%s", r.code, r.stdout, r.stderr)
	}
}

// TestHostileInspectSignal stops inspect with SIGINT and SIGTERM while it
// is blocked writing rows to a pipe nobody reads.
func TestHostileInspectSignal(t *testing.T) {
	const rows = 300_000
	def := rleRun(rows, 0, 1)
	data := forge(t, `message m { optional int32 x; }`, rows, []forgedColumn{{codec: meta.CodecUncompressed,
		pages: []forgedPage{{n: rows, def: def, enc: meta.EncodingPlain}}}})
	path := writeTemp(t, "rows.parquet", data)
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			cmd := exec.Command(hostileBinary(t), "inspect", "rows", path)
			stdout, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			// Read a little, so that the rows are being printed, then
			// stop reading: the child blocks on a full pipe.
			if _, err := io.ReadFull(stdout, make([]byte, 1024)); err != nil {
				t.Fatal(err)
			}
			time.Sleep(100 * time.Millisecond)
			start := time.Now()
			cmd.Process.Signal(sig)
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case <-done:
			case <-time.After(5 * time.Second):
				cmd.Process.Kill()
				t.Fatalf("inspect still running 5s after %v", sig)
			}
			took := time.Since(start)
			t.Logf("%v: exit %d after %v: %s", sig, cmd.ProcessState.ExitCode(), took, strings.TrimSpace(stderr.String()))
			if cmd.ProcessState.ExitCode() == 0 {
				t.Errorf("exit 0 after %v", sig)
			}
		})
	}
}

// nullListRecord is the record of issue-sized forged files: one LIST of
// forgedNullPages × forgedNullPerPage null elements (419 Mi), in a file of
// about 4 KB. Its JSON is 2 GB of "null,".
const (
	forgedNullPages   = 100
	forgedNullPerPage = 4 << 20
)

// countingWriter counts what is written to it and keeps the first and
// last few bytes.
type countingWriter struct {
	n          int64
	head, tail []byte
}

func (c *countingWriter) Write(p []byte) (int, error) {
	if len(c.head) < 16 {
		c.head = append(c.head, p[:min(len(p), 16-len(c.head))]...)
	}
	c.tail = append(c.tail, p[max(0, len(p)-16):]...)
	c.tail = c.tail[max(0, len(c.tail)-16):]
	c.n += int64(len(p))
	return len(p), nil
}

// heapPeak samples the Go heap in use until stop is closed and returns
// the largest sample, for a bound on what a call holds at once.
func heapPeak(stop <-chan struct{}) <-chan uint64 {
	out := make(chan uint64, 1)
	go func() {
		var peak uint64
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			peak = max(peak, ms.HeapAlloc)
			select {
			case <-stop:
				out <- peak
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	return out
}

// TestHostileNullListJSON reads the 4 KB file of one record of 419 Mi null
// list elements under the default budget, as `inspect rows --json` does:
// the record holds a bit per element, and its 2 GB of JSON stream out
// through WriteJSON in chunks. Reading it once held 6.3 GB (the JSON built
// whole in one growing buffer). Bounds are on bytes counted by the Go
// runtime and, for the command, by the kernel, never on time.
func TestHostileNullListJSON(t *testing.T) {
	data := forge(t, listSchema, 1, []forgedColumn{{codec: meta.CodecUncompressed, pages: nullListPages(forgedNullPages, forgedNullPerPage)}})
	if len(data) > 4<<10 {
		t.Fatalf("forged file is %d bytes", len(data))
	}
	const n = int64(forgedNullPages * forgedNullPerPage)
	wantJSON := int64(len(`{"l":[]}`)) + 5*n - 1 // "null" and a comma each, less the last comma

	// In this process, a quarter of the file (the bounds do not depend on
	// the length): 105 Mi nulls.
	quarter := forge(t, listSchema, 1, []forgedColumn{{codec: meta.CodecUncompressed, pages: nullListPages(forgedNullPages/4, forgedNullPerPage)}})
	checkNullListRecord(t, quarter, n/4)

	// The command, on the whole file, with its output counted, not kept.
	var cmdOut countingWriter
	r := runChildTo(t, nil, &cmdOut, "inspect", "rows", "--json", writeTemp(t, "nulls.parquet", data))
	if r.code != 0 || cmdOut.n != wantJSON+1 || string(cmdOut.tail) != "ull,null,null]}\n" {
		t.Fatalf("inspect rows --json: exit %d, %d bytes of output ending %q, want %d: %s", r.code, cmdOut.n, cmdOut.tail, wantJSON+1, r.stderr)
	}
	if r.peakRSS > rssBase(t)+512*mib {
		t.Errorf("peak RSS %d MiB for a 4 KB file (%d MiB at rest)", r.peakRSS/mib, rssBase(t)/mib)
	}
}

// checkNullListRecord reads the one record of a forged file of n null list
// elements with the reader and WriteJSON, and bounds the Go heap it takes.
func checkNullListRecord(t *testing.T, data []byte, n int64) {
	t.Helper()
	wantJSON := int64(len(`{"l":[]}`)) + 5*n - 1
	f, err := pqreader.Open(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	rows, err := f.Rows()
	if err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	stop := make(chan struct{})
	peak := heapPeak(stop)
	rec, err := rows.Next()
	if err != nil {
		close(stop)
		t.Fatalf("the default budget refuses a record of %d null elements: %v", n, err)
	}
	var out countingWriter
	err = rec.WriteJSON(&out)
	close(stop)
	heap := <-peak
	if err != nil {
		t.Fatal(err)
	}
	if out.n != wantJSON || string(out.head) != `{"l":[null,null,` || string(out.tail) != `null,null,null]}` {
		t.Errorf("JSON of %d bytes, %q...%q; want %d bytes of nulls", out.n, out.head, out.tail, wantJSON)
	}
	// The record: a bit per element, and the pages' levels.
	t.Logf("peak Go heap %d MiB reading and rendering %d null elements", heap>>20, n)
	if heap > 256<<20 {
		t.Errorf("peak Go heap %d MiB reading and rendering the record, want at most 256 MiB (the file's JSON is %d MiB)", heap>>20, wantJSON>>20)
	}
	if _, err := rows.Next(); err != io.EOF {
		t.Errorf("after the record: %v", err)
	}
}
