package compress

import (
	"encoding/binary"
	"hash/crc32"
	"os"
	"path/filepath"
	"testing"

	"github.com/pqsink/pqsink/meta"
)

// page is one compressed page body cut out of a real file.
type page struct {
	codec meta.CompressionCodec
	src   []byte // the compressed part
	size  int    // what it must decompress to
}

// filePages walks every page of every column chunk of a Parquet file, using
// meta for the footer and page headers, and checks each page's CRC where
// one is written, which proves the bodies are cut at the right places.
func filePages(t testing.TB, name string) []page {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	footerLen := int(binary.LittleEndian.Uint32(data[len(data)-8:]))
	var fmd meta.FileMetaData
	if _, err := fmd.Decode(data[len(data)-8-footerLen : len(data)-8]); err != nil {
		t.Fatalf("%s: footer: %v", name, err)
	}
	var pages []page
	for _, rg := range fmd.RowGroups {
		for _, cc := range rg.Columns {
			md := cc.MetaData
			pos := md.DataPageOffset
			if md.DictionaryPageOffset != nil && *md.DictionaryPageOffset > 0 && *md.DictionaryPageOffset < pos {
				pos = *md.DictionaryPageOffset
			}
			end := pos + md.TotalCompressedSize
			for pos < end {
				var h meta.PageHeader
				n, err := h.Decode(data[pos:end])
				if err != nil {
					t.Fatalf("%s: page header at %d: %v", name, pos, err)
				}
				body := data[pos+int64(n) : pos+int64(n)+int64(h.CompressedPageSize)]
				pos += int64(n) + int64(h.CompressedPageSize)
				if h.CRC != nil && crc32.ChecksumIEEE(body) != uint32(*h.CRC) {
					t.Fatalf("%s: page CRC mismatch: body cut wrongly", name)
				}
				p := page{codec: md.Codec, src: body, size: int(h.UncompressedPageSize)}
				if v2 := h.DataPageHeaderV2; v2 != nil {
					// Levels precede the values and are never compressed.
					levels := int(v2.RepetitionLevelsByteLength + v2.DefinitionLevelsByteLength)
					p.src, p.size = body[levels:], p.size-levels
					if v2.IsCompressed != nil && !*v2.IsCompressed {
						p.codec = meta.CodecUncompressed
					}
				}
				pages = append(pages, p)
			}
		}
	}
	return pages
}

// TestRealPages decompresses every page of parquet-testing files written by
// other implementations (parquet-mr, Arrow C++, …).
func TestRealPages(t *testing.T) {
	tests := []struct {
		file  string
		codec meta.CompressionCodec
	}{
		{"alltypes_plain.snappy.parquet", meta.CodecSnappy},
		{"rle-dict-snappy-checksum.parquet", meta.CodecSnappy},
		{"datapage_v2_empty_datapage.snappy.parquet", meta.CodecSnappy},
		{"concatenated_gzip_members.parquet", meta.CodecGzip},
		{"byte_stream_split.zstd.parquet", meta.CodecZstd},
		{"page_v2_empty_compressed.parquet", meta.CodecZstd},
		{"lz4_raw_compressed.parquet", meta.CodecLZ4Raw},
		{"lz4_raw_compressed_larger.parquet", meta.CodecLZ4Raw},
		{"hadoop_lz4_compressed.parquet", meta.CodecLZ4},
		{"hadoop_lz4_compressed_larger.parquet", meta.CodecLZ4},
		{"non_hadoop_lz4_compressed.parquet", meta.CodecLZ4},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			pages := filePages(t, tt.file)
			if len(pages) == 0 {
				t.Fatal("no pages")
			}
			for i, p := range pages {
				if p.codec != tt.codec && p.codec != meta.CodecUncompressed {
					t.Fatalf("page %d: codec %v, want %v", i, p.codec, tt.codec)
				}
				codec, err := New(p.codec)
				if err != nil {
					t.Fatal(err)
				}
				out, err := codec.Decode(nil, p.src, p.size)
				if err != nil {
					t.Fatalf("page %d (%d → %d bytes): %v", i, len(p.src), p.size, err)
				}
				if len(out) != p.size {
					t.Fatalf("page %d: %d bytes, want %d", i, len(out), p.size)
				}
			}
		})
	}
}

// TestRealGzipMembers checks that the concatenated_gzip_members page really
// holds two members and decodes to the 513 UINT64 values 1…513 the file is
// documented to hold, at the end of the page after its levels.
func TestRealGzipMembers(t *testing.T) {
	pages := filePages(t, "concatenated_gzip_members.parquet")
	if len(pages) != 1 {
		t.Fatalf("%d pages, want 1", len(pages))
	}
	p := pages[0]
	codec, err := New(meta.CodecGzip)
	if err != nil {
		t.Fatal(err)
	}
	got, err := codec.Decode(nil, p.src, p.size)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) < 513*8 {
		t.Fatalf("page of %d bytes cannot hold 513 UINT64", len(got))
	}
	values := got[len(got)-513*8:]
	for i := range 513 {
		if v := binary.LittleEndian.Uint64(values[8*i:]); v != uint64(i+1) {
			t.Fatalf("value %d = %d, want %d", i, v, i+1)
		}
	}
	// Decoding only the first member must come up short.
	if _, err := codec.Decode(nil, p.src[:firstGzipMemberEnd(t, p.src)], p.size); err == nil {
		t.Error("first member alone decoded to the full page")
	}
}

// firstGzipMemberEnd finds where the second gzip member starts, by its
// magic bytes and the deflate method.
func firstGzipMemberEnd(t *testing.T, b []byte) int {
	for i := 18; i+3 <= len(b); i++ {
		if b[i] == 0x1f && b[i+1] == 0x8b && b[i+2] == 8 {
			return i
		}
	}
	t.Fatal("no second gzip member")
	return 0
}

// TestRealLZ4Framing checks which LZ4 pages take the Hadoop path and which
// the raw-block fallback.
func TestRealLZ4Framing(t *testing.T) {
	for file, wantHadoop := range map[string]bool{
		"hadoop_lz4_compressed.parquet":        true,
		"hadoop_lz4_compressed_larger.parquet": true,
		"non_hadoop_lz4_compressed.parquet":    false,
	} {
		for i, p := range filePages(t, file) {
			if p.size == 0 {
				continue
			}
			if _, n, ok := decodeHadoop(nil, p.src, p.size); (ok && n == p.size) != wantHadoop {
				t.Errorf("%s page %d: Hadoop framing %v, want %v", file, i, ok, wantHadoop)
			}
		}
	}
}
