package test

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pqsink/pqsink/compress"
	"github.com/pqsink/pqsink/meta"
	"github.com/pqsink/pqsink/schema"
	"github.com/pqsink/pqsink/writer/encoding"
)

// The hostile_*_test.go files try pqsink as an attacker would: forged
// Parquet files whose few bytes declare huge pages, counts and records,
// and oversized or malformed input lines for convert. Each runs the real
// command in a child process and asserts what matters from outside: the
// exit status, the message, and the peak RSS the kernel reports for the
// child (never a timing).

// forgedPage is one page of a forged column chunk, its levels and values
// already encoded, so that a few bytes can declare millions of values.
type forgedPage struct {
	dict     bool   // a dictionary page
	n        int32  // num_values
	rows     int32  // num_rows, for v2
	rep, def []byte // RLE/bit-packed hybrid levels, without length prefix
	values   []byte
	enc      meta.Encoding
	v2       bool
	// uncompressed overrides the declared uncompressed size when set.
	uncompressed int32
	raw          []byte // when set, the body as stored, already compressed
}

type forgedColumn struct {
	codec meta.CompressionCodec
	pages []forgedPage
	// values overrides the chunk's num_values when set.
	values int64
}

// forge writes a Parquet file by hand from meta, compress and
// writer/encoding: the pages the columns describe, in one row group of
// rows rows, and a footer that believes them.
func forge(t testing.TB, schemaText string, rows int64, cols []forgedColumn) []byte {
	t.Helper()
	s, err := schema.Parse(schemaText)
	if err != nil {
		t.Fatal(err)
	}
	out := []byte("PAR1")
	rg := meta.RowGroup{NumRows: rows}
	for i, leaf := range s.Leaves() {
		c := cols[i]
		codec, err := compress.New(c.codec)
		if err != nil {
			t.Fatal(err)
		}
		start := int64(len(out))
		cm := &meta.ColumnMetaData{
			Type: leaf.Physical, PathInSchema: leaf.Path, Codec: c.codec,
			Encodings: []meta.Encoding{meta.EncodingPlain, meta.EncodingRLE}, DataPageOffset: start,
		}
		var total int64
		for _, p := range c.pages {
			var plain, body []byte
			h := meta.PageHeader{}
			switch {
			case p.dict:
				plain = p.values
				h.Type = meta.PageDictionary
				h.DictionaryPageHeader = &meta.DictionaryPageHeader{NumValues: p.n, Encoding: meta.EncodingPlain}
				cm.DictionaryPageOffset = &start
			case p.v2:
				plain = p.values
				h.Type = meta.PageDataV2
				h.DataPageHeaderV2 = &meta.DataPageHeaderV2{NumValues: p.n, NumRows: p.rows, Encoding: p.enc,
					DefinitionLevelsByteLength: int32(len(p.def)), RepetitionLevelsByteLength: int32(len(p.rep))}
			default:
				if leaf.MaxRep > 0 {
					plain = binary.LittleEndian.AppendUint32(plain, uint32(len(p.rep)))
					plain = append(plain, p.rep...)
				}
				if leaf.MaxDef > 0 {
					plain = binary.LittleEndian.AppendUint32(plain, uint32(len(p.def)))
					plain = append(plain, p.def...)
				}
				plain = append(plain, p.values...)
				h.Type = meta.PageData
				h.DataPageHeader = &meta.DataPageHeader{NumValues: p.n, Encoding: p.enc,
					DefinitionLevelEncoding: meta.EncodingRLE, RepetitionLevelEncoding: meta.EncodingRLE}
			}
			switch {
			case p.raw != nil:
				body = p.raw
			case p.v2:
				body = append(append(append(body, p.rep...), p.def...), mustEncode(t, codec, plain)...)
			default:
				body = mustEncode(t, codec, plain)
			}
			size := int32(len(plain))
			if p.v2 {
				size += int32(len(p.rep) + len(p.def))
			}
			if p.uncompressed != 0 {
				size = p.uncompressed
			}
			h.UncompressedPageSize, h.CompressedPageSize = size, int32(len(body))
			out = h.Append(out)
			out = append(out, body...)
			if !p.dict {
				total += int64(p.n)
			}
		}
		cm.NumValues = total
		if c.values != 0 {
			cm.NumValues = c.values
		}
		cm.TotalCompressedSize = int64(len(out)) - start
		cm.TotalUncompressedSize = cm.TotalCompressedSize
		rg.Columns = append(rg.Columns, meta.ColumnChunk{FileOffset: start, MetaData: cm})
		rg.TotalByteSize += cm.TotalCompressedSize
	}
	md := &meta.FileMetaData{Version: 2, Schema: s.Elements(), NumRows: rows, RowGroups: []meta.RowGroup{rg}}
	footer := len(out)
	out = md.Append(out)
	out = binary.LittleEndian.AppendUint32(out, uint32(len(out)-footer))
	return append(out, "PAR1"...)
}

func mustEncode(t testing.TB, c compress.Codec, plain []byte) []byte {
	t.Helper()
	if c.Codec() == meta.CodecUncompressed {
		return plain
	}
	b, err := c.Encode(nil, plain)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// rleRun encodes count levels (or dictionary indices) of value as one run
// of the RLE/bit-packing hybrid, bitWidth bits wide: a few bytes for any
// count.
func rleRun(count int, value uint64, bitWidth int) []byte {
	b := binary.AppendUvarint(nil, uint64(count)<<1)
	for i := 0; i < (bitWidth+7)/8; i++ {
		b = append(b, byte(value>>(8*i)))
	}
	return b
}

// levels encodes the levels ls, for pages of ordinary size.
func levels(ls []uint8, maxLevel int) []byte {
	return encoding.AppendLevels(nil, ls, encoding.BitWidth(uint64(maxLevel)))
}

var hostileBuild struct {
	once          sync.Once
	path, rsswrap string
	err           error
}

// hostileBinary builds the pqsink command once per test binary, and the
// rsswrap helper that measures its peak RSS.
func hostileBinary(t testing.TB) string {
	t.Helper()
	hostileBuild.once.Do(func() {
		dir, err := newBuildDir(hostileBuildPrefix)
		if err != nil {
			hostileBuild.err = err
			return
		}
		hostileBuild.path = filepath.Join(dir, "pqsink")
		hostileBuild.rsswrap = filepath.Join(dir, "rsswrap")
		for _, b := range [][2]string{{hostileBuild.path, "./cmd/pqsink"}, {hostileBuild.rsswrap, "./test/testdata/rsswrap"}} {
			cmd := exec.Command("go", "build", "-o", b[0], b[1])
			cmd.Dir = ".."
			if out, err := cmd.CombinedOutput(); err != nil {
				hostileBuild.err = fmt.Errorf("go build %s: %v\n%s", b[1], err, out)
				return
			}
		}
	})
	if hostileBuild.err != nil {
		t.Fatal(hostileBuild.err)
	}
	return hostileBuild.path
}

// childResult is how a pqsink child process ended.
type childResult struct {
	code           int
	stdout, stderr string
	peakRSS        int64 // bytes, from the kernel's rusage
	elapsed        time.Duration
}

// runChild runs pqsink with args and stdin, under rsswrap, and reports its
// exit status, output and peak RSS. It fails the test if the child runs
// away.
func runChild(t testing.TB, stdin []byte, args ...string) childResult {
	t.Helper()
	var stdout bytes.Buffer
	r := runChildTo(t, stdin, &stdout, args...)
	r.stdout = stdout.String()
	return r
}

// runChildTo is runChild with the child's standard output written to
// stdout, for outputs too large to hold; the result's stdout is empty.
func runChildTo(t testing.TB, stdin []byte, stdout io.Writer, args ...string) childResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	bin := hostileBinary(t)
	cmd := exec.CommandContext(ctx, hostileBuild.rsswrap, append([]string{bin}, args...)...)
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = stdout, &stderr
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	start := time.Now()
	err := cmd.Run()
	r := childResult{stderr: stderr.String(), elapsed: time.Since(start)}
	if cmd.ProcessState == nil {
		t.Fatalf("pqsink %s: %v", strings.Join(args, " "), err)
	}
	if ctx.Err() != nil {
		t.Fatalf("pqsink %s: killed after %v", shortArgs(args), r.elapsed)
	}
	r.code = cmd.ProcessState.ExitCode()
	i := strings.LastIndex(r.stderr, "rsswrap: maxrss=")
	if i < 0 {
		t.Fatalf("pqsink %s: no peak RSS from rsswrap: %s", shortArgs(args), r.stderr)
	}
	kb, _ := strconv.ParseInt(strings.TrimSpace(r.stderr[i+len("rsswrap: maxrss="):]), 10, 64)
	r.peakRSS, r.stderr = kb*1024, r.stderr[:i]
	t.Logf("pqsink %s: exit %d, peak RSS %.1f MiB, %v", shortArgs(args), r.code, float64(r.peakRSS)/(1<<20), r.elapsed.Round(time.Millisecond))
	return r
}

func shortArgs(args []string) string {
	var out []string
	for _, a := range args {
		if strings.HasPrefix(a, os.TempDir()) {
			a = filepath.Base(a)
		}
		out = append(out, a)
	}
	return strings.Join(out, " ")
}

func writeTemp(t testing.TB, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}
