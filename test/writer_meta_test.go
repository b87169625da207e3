package test

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math"
	"math/big"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	arrowmeta "github.com/apache/arrow-go/v18/parquet/metadata"
	pqgo "github.com/parquet-go/parquet-go"

	"github.com/pqsink/pqsink/internal/testutil/duckdb"
	"github.com/pqsink/pqsink/meta"
	"github.com/pqsink/pqsink/writer"
)

// bloomPaths are the columns that get bloom filters in the metadata cases:
// types whose values every reader hashes from the same physical value.
var bloomPaths = []string{"req_str", "opt_str", "lst_str.list.element", "req_i64", "opt_i32", "req_date", "req_tsus", "opt_uuid"}

// metadataCases are the files whose metadata is checked: the dictionary
// without adaptive choices (so every column tries its dictionary), a
// forced fallback to each kind of encoding, and plain and delta pages in
// both page versions. All have bloom filters on bloomPaths.
func metadataCases() []*matrixCase {
	want := map[string]bool{
		"enc-plain": true, "enc-delta_binary_packed": true, "enc-delta_length_byte_array": true,
		"enc-byte_stream_split": true, "fallback-plain": true, "fallback-delta_byte_array": true,
		"fallback-delta_binary_packed": true,
	}
	var out []*matrixCase
	for _, mc := range matrixCases(leafTypes()) {
		if want[mc.name] {
			out = append(out, mc)
		}
	}
	full := matrixSchema(leafTypes(), allShapes)
	out = append(out, &matrixCase{
		name: "dictionary", schema: full, seed: 1001, codec: meta.CodecZstd, version: 2, dict: true,
		opts: []writer.Option{writer.AdaptiveEncoding(false)},
	})
	for _, mc := range out {
		mc.bloom = bloomPaths
	}
	return out
}

// TestWriterMetadata checks, for each metadata case, what the readers
// report about every column chunk against what was asked and what was
// written: codec, encodings (as listed by DuckDB and as found on the pages
// by arrow-go), dictionary fallback, chunk statistics, the page index, and
// bloom filters.
func TestWriterMetadata(t *testing.T) {
	db := duckdb.Start(t)
	t.Run("group", func(t *testing.T) {
		for _, mc := range metadataCases() {
			t.Run(mc.name, func(t *testing.T) {
				t.Parallel()
				w := writeCase(t, mc)
				f := openChecked(t, w.path)
				checkEncodings(t, db, mc, w, f)
				checkStatistics(t, db, mc, w, f)
				checkPageIndex(t, mc, w, f)
				checkBloomFilters(t, db, mc, w, f)
			})
		}
	})
}

// checkedFile is a file opened by parquet-go and arrow-go, with the row
// group boundaries and the column paths.
type checkedFile struct {
	pq      *pqgo.File
	arrow   *file.Reader
	paths   []string
	leaves  []*node
	levels  []bool // the column has repetition or definition levels
	rgStart []int  // first row of each row group, and the total at the end
}

func openChecked(t *testing.T, path string) *checkedFile {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	pf, err := pqgo.OpenFile(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatalf("parquet-go: %v", err)
	}
	af, err := file.OpenParquetFile(path, false)
	if err != nil {
		t.Fatalf("arrow-go: %v", err)
	}
	t.Cleanup(func() { af.Close() })
	cf := &checkedFile{pq: pf, arrow: af, rgStart: []int{0}}
	for _, rg := range pf.Metadata().RowGroups {
		cf.rgStart = append(cf.rgStart, cf.rgStart[len(cf.rgStart)-1]+int(rg.NumRows))
	}
	if len(cf.rgStart) < 3 {
		t.Errorf("%d row groups; the matrix sizes are meant to give several", len(cf.rgStart)-1)
	}
	return cf
}

// flatColumns returns the indexes of the top-level leaf columns (one value
// per row), whose statistics and pages can be checked row by row.
func (cf *checkedFile) flatColumns(s *fileSchema) []int {
	var out []int
	paths, leaves := s.leafPaths()
	cf.paths, cf.leaves = paths, leaves
	cf.levels = nil
	for _, f := range s.fields {
		var walk func(n *node, levels bool)
		walk = func(n *node, levels bool) {
			levels = levels || n.rep != "required"
			if n.isLeaf() {
				cf.levels = append(cf.levels, levels)
			}
			for _, c := range n.children {
				walk(c, levels)
			}
		}
		walk(f, false)
	}
	for i, p := range paths {
		if !strings.Contains(p, ".") && leaves[i].rep != "repeated" {
			out = append(out, i)
		}
	}
	return out
}

// checkEncodings compares DuckDB's parquet_metadata (codec, encodings)
// with the pages arrow-go finds, and both with what the case asked for.
func checkEncodings(t *testing.T, db *duckdb.DB, mc *matrixCase, w *written, cf *checkedFile) {
	cf.flatColumns(mc.schema)
	res := db.Query(t, "SELECT row_group_id, column_id, path_in_schema, compression, encodings FROM parquet_metadata("+duckdb.Quote(w.path)+") ORDER BY row_group_id, column_id")
	if len(res.Rows) != (len(cf.rgStart)-1)*len(cf.paths) {
		t.Fatalf("DuckDB lists %d column chunks, want %d", len(res.Rows), (len(cf.rgStart)-1)*len(cf.paths))
	}
	wantCodec := strings.ToUpper(mc.codec.String())
	fellBack := map[string]bool{}
	for _, r := range res.Rows {
		rg, _ := strconv.Atoi(fmt.Sprint(r[0]))
		col, _ := strconv.Atoi(fmt.Sprint(r[1]))
		path := cf.paths[col]
		if got := fmt.Sprint(r[3]); got != wantCodec {
			t.Errorf("row group %d %s: codec %s, want %s", rg, path, got, wantCodec)
		}
		listed := strings.Split(fmt.Sprint(r[4]), ", ")
		pages, dictFirst, err := pageEncodings(cf.arrow, rg, col)
		if err != nil {
			t.Errorf("row group %d %s: arrow-go page reader: %v", rg, path, err)
			continue
		}
		// The footer lists the page encodings and RLE for the levels.
		found := slices.Clone(pages)
		if cf.levels[col] {
			found = append(found, "RLE")
		}
		slices.Sort(found)
		found = slices.Compact(found)
		sortedListed := slices.Sorted(slices.Values(listed))
		if !slices.Equal(sortedListed, found) {
			t.Errorf("row group %d %s: footer lists encodings %v, pages use %v", rg, path, listed, found)
		}
		enc := meta.EncodingPlain.String()
		if e, ok := mc.encodings[path]; ok {
			enc = e.String()
		}
		hasDict := slices.Contains(pages, "RLE_DICTIONARY")
		if hasDict && !dictFirst {
			t.Errorf("row group %d %s: dictionary-encoded pages without a dictionary page first", rg, path)
		}
		for _, p := range pages {
			switch {
			case p == "RLE_DICTIONARY" || p == "PLAIN" && hasDict:
				if !mc.dict {
					t.Errorf("row group %d %s: dictionary pages with dictionaries off", rg, path)
				}
			case p != enc:
				t.Errorf("row group %d %s: %s pages, want %s", rg, path, p, enc)
			}
		}
		if hasDict && slices.Contains(pages, enc) && enc != "PLAIN" || hasDict && countOf(pages, "PLAIN") > 1 {
			fellBack[path] = true
		}
		if mc.dict && !mc.fallback && cf.leaves[col].leaf.kind == "ENUM" && !hasDict {
			t.Errorf("row group %d %s: four distinct values, and no dictionary", rg, path)
		}
	}
	if mc.fallback {
		for _, p := range []string{"fb_str", "fb_i64"} {
			e := mc.encodings[p] // PLAIN when the case's encoding does not apply
			if !fellBack[p] {
				t.Errorf("%s: no chunk fell back from its %d-byte dictionary to %s", p, tinyDictionary, e)
			}
		}
	}
}

func countOf(ss []string, s string) int {
	n := 0
	for _, x := range ss {
		if x == s {
			n++
		}
	}
	return n
}

// pageEncodings lists the encoding of each page of a chunk, in order, as
// arrow-go's page reader reports them, and whether a dictionary page comes
// first.
func pageEncodings(r *file.Reader, rg, col int) (encs []string, dictFirst bool, err error) {
	pr, err := r.RowGroup(rg).GetColumnPageReader(col)
	if err != nil {
		return nil, false, err
	}
	for i := 0; pr.Next(); i++ {
		p := pr.Page()
		const dictionaryPage = 2 // parquet.thrift PageType.DICTIONARY_PAGE
		if int(p.Type()) == dictionaryPage && i == 0 {
			dictFirst = true
		}
		encs = append(encs, meta.Encoding(p.Encoding()).String())
	}
	return encs, dictFirst, pr.Err()
}

// flatValues returns the canonical values of column col for rows [lo, hi).
func flatValues(w *written, name string, lo, hi int) []any {
	var out []any
	for _, r := range w.want[lo:hi] {
		out = append(out, r[name])
	}
	return out
}

// bounds returns the expected min and max of the non-null values by the
// type's order: NaN takes no part, and a zero bound is written as -0 for
// min and +0 for max. ok is false when no value counts.
func bounds(t *leafType, vals []any) (lo, hi string, ok bool) {
	for _, v := range vals {
		s, isStr := v.(string)
		if !isStr || s == "NaN" {
			continue
		}
		if !ok {
			lo, hi, ok = s, s, true
			continue
		}
		if compareCanon(t, s, lo) < 0 {
			lo = s
		}
		if compareCanon(t, s, hi) > 0 {
			hi = s
		}
	}
	if ok && t.order == orderFloat {
		if lo == "0" || lo == "-0" {
			lo = "-0"
		}
		if hi == "0" || hi == "-0" {
			hi = "0"
		}
	}
	return lo, hi, ok
}

// compareCanon orders two canonical values of type t by its sort order.
func compareCanon(t *leafType, a, b string) int {
	switch t.order {
	case orderBool:
		return strings.Compare(a, b) // "false" < "true"
	case orderFloat:
		x, _ := strconv.ParseFloat(a, 64)
		y, _ := strconv.ParseFloat(b, 64)
		switch {
		case x < y:
			return -1
		case x > y:
			return 1
		}
		return 0
	case orderBytes:
		return bytes.Compare(orderKey(t, a), orderKey(t, b))
	}
	switch t.kind {
	case "DATE", "TIME", "TIMESTAMP":
		return strings.Compare(a, b) // fixed-width text in the matrix's year range
	case "DECIMAL":
		x, _ := new(big.Rat).SetString(a)
		y, _ := new(big.Rat).SetString(b)
		return x.Cmp(y)
	}
	x, _ := new(big.Int).SetString(a, 10)
	y, _ := new(big.Int).SetString(b, 10)
	return x.Cmp(y)
}

// orderKey is the byte string that byte-wise order compares.
func orderKey(t *leafType, canon string) []byte {
	switch {
	case t.kind == "UUID":
		b, _ := hex.DecodeString(strings.ReplaceAll(canon, "-", ""))
		return b
	case t.name == "str" || t.kind == "ENUM" || t.kind == "JSON":
		return []byte(canon)
	}
	b, _ := base64.StdEncoding.DecodeString(canon)
	return b
}

// statValue decodes a PLAIN-encoded statistics value to canonical form.
func statValue(t *leafType, b []byte) (string, error) {
	switch t.physical {
	case meta.TypeBoolean:
		if len(b) != 1 {
			return "", fmt.Errorf("boolean of %d bytes", len(b))
		}
		return fmt.Sprint(b[0] != 0), nil
	case meta.TypeInt32:
		if len(b) != 4 {
			return "", fmt.Errorf("int32 of %d bytes", len(b))
		}
		v := binary.LittleEndian.Uint32(b)
		return intLeaf(t, int64(int32(v)), uint64(v))
	case meta.TypeInt64:
		if len(b) != 8 {
			return "", fmt.Errorf("int64 of %d bytes", len(b))
		}
		v := binary.LittleEndian.Uint64(b)
		return intLeaf(t, int64(v), v)
	case meta.TypeFloat:
		if len(b) != 4 {
			return "", fmt.Errorf("float of %d bytes", len(b))
		}
		return formatFloat(float64(math.Float32frombits(binary.LittleEndian.Uint32(b))), 32), nil
	case meta.TypeDouble:
		if len(b) != 8 {
			return "", fmt.Errorf("double of %d bytes", len(b))
		}
		return formatFloat(math.Float64frombits(binary.LittleEndian.Uint64(b)), 64), nil
	}
	return pqgoLeaf(t, pqgo.ByteArrayValue(b))
}

// checkStatistics compares the chunk statistics in the footer (as
// parquet-go decodes it) and DuckDB's null counts with the input, for the
// columns with one value per row.
func checkStatistics(t *testing.T, db *duckdb.DB, mc *matrixCase, w *written, cf *checkedFile) {
	// DuckDB leaves stats_min_value NULL for some chunks that have
	// statistics (inexact binary bounds, some float chunks), so it is only
	// asked to agree that columns without an order have none.
	res := db.Query(t, "SELECT row_group_id, column_id, stats_null_count, stats_min_value IS NOT NULL FROM parquet_metadata("+duckdb.Quote(w.path)+") ORDER BY row_group_id, column_id")
	duckNulls := map[[2]int]string{}
	duckHasMin := map[[2]int]bool{}
	for _, r := range res.Rows {
		rg, _ := strconv.Atoi(fmt.Sprint(r[0]))
		col, _ := strconv.Atoi(fmt.Sprint(r[1]))
		duckNulls[[2]int{rg, col}] = fmt.Sprint(r[2])
		duckHasMin[[2]int{rg, col}] = r[3] == true
	}
	md := cf.pq.Metadata()
	for _, col := range cf.flatColumns(mc.schema) {
		n := cf.leaves[col]
		lt := n.leaf
		for rg := range md.RowGroups {
			name := fmt.Sprintf("row group %d %s", rg, cf.paths[col])
			vals := flatValues(w, n.name, cf.rgStart[rg], cf.rgStart[rg+1])
			nulls := 0
			for _, v := range vals {
				if v == nil {
					nulls++
				}
			}
			st := md.RowGroups[rg].Columns[col].MetaData.Statistics
			if st.NullCount != int64(nulls) {
				t.Errorf("%s: null_count %d, want %d", name, st.NullCount, nulls)
			}
			if got := duckNulls[[2]int{rg, col}]; got != strconv.Itoa(nulls) {
				t.Errorf("%s: DuckDB stats_null_count %s, want %d", name, got, nulls)
			}
			lo, hi, ok := bounds(lt, vals)
			if lt.order == orderNone || !ok {
				if st.MinValue != nil || st.MaxValue != nil || duckHasMin[[2]int{rg, col}] {
					t.Errorf("%s: min/max statistics for a column without an order or values", name)
				}
				continue
			}
			checkBounds(t, name, lt, st.MinValue, st.MaxValue, lo, hi)
		}
	}
}

// checkBounds compares encoded min/max with the expected ones: equal,
// except that binary bounds longer than the truncation length are a
// prefix of the min and an upper bound of the max.
func checkBounds(t *testing.T, name string, lt *leafType, minB, maxB []byte, lo, hi string) {
	t.Helper()
	gotLo, err1 := statValue(lt, minB)
	gotHi, err2 := statValue(lt, maxB)
	if err1 != nil || err2 != nil {
		t.Errorf("%s: undecodable bounds: %v %v", name, err1, err2)
		return
	}
	if lt.physical == meta.TypeByteArray && lt.order == orderBytes {
		wantLo, wantHi := orderKey(lt, lo), orderKey(lt, hi)
		if !bytes.HasPrefix(wantLo, minB) || len(minB) > 64 {
			t.Errorf("%s: min %q is not a prefix (of at most 64 bytes) of %q", name, minB, wantLo)
		}
		if bytes.Compare(maxB, wantHi) < 0 || len(maxB) > 64 || len(wantHi) <= 64 && !bytes.Equal(maxB, wantHi) {
			t.Errorf("%s: max %q does not bound %q", name, maxB, wantHi)
		}
		return
	}
	if gotLo != lo || gotHi != hi {
		t.Errorf("%s: min/max %s/%s, want %s/%s", name, gotLo, gotHi, lo, hi)
	}
}

// checkPageIndex checks the column and offset indexes of the columns with
// one value per row against the pages: row ranges, null pages, bounds.
func checkPageIndex(t *testing.T, mc *matrixCase, w *written, cf *checkedFile) {
	cis, ois := cf.pq.ColumnIndexes(), cf.pq.OffsetIndexes()
	ncol := len(cf.paths)
	nrg := len(cf.rgStart) - 1
	if len(cis) != nrg*ncol || len(ois) != nrg*ncol {
		t.Fatalf("parquet-go finds %d column and %d offset indexes, want %d", len(cis), len(ois), nrg*ncol)
	}
	multiPage := 0
	for _, col := range cf.flatColumns(mc.schema) {
		n := cf.leaves[col]
		for rg := 0; rg < nrg; rg++ {
			name := fmt.Sprintf("row group %d %s", rg, cf.paths[col])
			ci, oi := cis[rg*ncol+col], ois[rg*ncol+col]
			locs := oi.PageLocations
			if n.leaf.order == orderNone && len(ci.NullPages) == 0 {
				// No sort order, no column index (PageIndex.md allows
				// leaving it out); the offset index is still checked.
				ci.NullPages = make([]bool, len(locs))
				ci.MinValues = make([][]byte, len(locs))
				ci.MaxValues = make([][]byte, len(locs))
				for j := range locs {
					end := int64(cf.rgStart[rg+1] - cf.rgStart[rg])
					if j+1 < len(locs) {
						end = locs[j+1].FirstRowIndex
					}
					ci.NullPages[j] = allNil(flatValues(w, n.name, cf.rgStart[rg]+int(locs[j].FirstRowIndex), cf.rgStart[rg]+int(end)))
				}
			}
			if len(locs) != len(ci.NullPages) || len(locs) != len(ci.MinValues) || len(locs) != len(ci.MaxValues) {
				t.Errorf("%s: %d page locations, %d null_pages, %d/%d bounds", name, len(locs), len(ci.NullPages), len(ci.MinValues), len(ci.MaxValues))
				continue
			}
			pages, _, err := pageEncodings(cf.arrow, rg, col)
			if err != nil {
				t.Errorf("%s: %v", name, err)
				continue
			}
			dataPages := len(pages)
			if len(pages) > 0 && (pages[0] == "PLAIN" && slices.Contains(pages, "RLE_DICTIONARY")) {
				dataPages-- // the dictionary page is not in the offset index
			}
			if len(locs) != dataPages {
				t.Errorf("%s: offset index has %d pages, the chunk %d data pages", name, len(locs), dataPages)
			}
			if len(locs) > 1 {
				multiPage++
			}
			rows := cf.rgStart[rg+1] - cf.rgStart[rg]
			for j, l := range locs {
				end := int64(rows)
				if j+1 < len(locs) {
					end = locs[j+1].FirstRowIndex
				}
				if j == 0 && l.FirstRowIndex != 0 || l.FirstRowIndex >= end {
					t.Errorf("%s: page %d first_row_index %d (next %d)", name, j, l.FirstRowIndex, end)
					continue
				}
				vals := flatValues(w, n.name, cf.rgStart[rg]+int(l.FirstRowIndex), cf.rgStart[rg]+int(end))
				allNull := allNil(vals)
				if ci.NullPages[j] != allNull {
					t.Errorf("%s: page %d null_pages %v, want %v", name, j, ci.NullPages[j], allNull)
				}
				if n.leaf.order == orderNone {
					continue
				}
				if lo, hi, ok := bounds(n.leaf, vals); ok {
					checkBounds(t, fmt.Sprintf("%s page %d", name, j), n.leaf, ci.MinValues[j], ci.MaxValues[j], lo, hi)
				}
			}
		}
	}
	if multiPage == 0 {
		t.Errorf("no column chunk has more than one page; the matrix sizes are meant to give several")
	}
}

// checkBloomFilters probes the bloom filters with every value written and
// with values that were not: parquet-go and arrow-go must find every
// written value, DuckDB's parquet_bloom_probe must not exclude one, and
// few absent values may pass.
func checkBloomFilters(t *testing.T, db *duckdb.DB, mc *matrixCase, w *written, cf *checkedFile) {
	bloomReader := cf.arrow.GetBloomFilterReader()
	for _, p := range mc.bloom {
		col := slices.Index(cf.paths, p)
		lt := cf.leaves[col].leaf
		for rg := range cf.pq.RowGroups() {
			name := fmt.Sprintf("row group %d %s", rg, p)
			present := map[string]bool{}
			for _, r := range w.want[cf.rgStart[rg]:cf.rgStart[rg+1]] {
				collectLeaves(r, strings.Split(p, "."), present)
			}
			pqBloom := cf.pq.RowGroups()[rg].ColumnChunks()[col].(*pqgo.FileColumnChunk).BloomFilter()
			rgBloom, err := bloomReader.RowGroup(rg)
			if err != nil {
				t.Fatalf("%s: arrow-go: %v", name, err)
			}
			arrowBloom, err := rgBloom.GetColumnBloomFilter(col)
			if pqBloom == nil || arrowBloom == nil || err != nil {
				t.Errorf("%s: no bloom filter (parquet-go %v, arrow-go %v, %v)", name, pqBloom != nil, arrowBloom != nil, err)
				continue
			}
			probe := func(v string) (bool, bool) {
				pv, av := bloomValues(lt, v)
				inPq, err := pqBloom.Check(pv)
				if err != nil {
					t.Fatalf("%s: parquet-go: %v", name, err)
				}
				return inPq, arrowBloom.CheckHash(av(arrowBloom.Hasher()))
			}
			for v := range present {
				inPq, inArrow := probe(v)
				if !inPq || !inArrow {
					t.Errorf("%s: written value %q not in the filter (parquet-go %v, arrow-go %v)", name, v, inPq, inArrow)
				}
			}
			falsePos := 0
			const absentProbes = 300
			for i := range absentProbes {
				v := probeValue(lt, i)
				if present[v] {
					continue
				}
				if inPq, inArrow := probe(v); inPq || inArrow {
					falsePos++
				}
			}
			if falsePos > absentProbes/10 {
				t.Errorf("%s: %d of %d absent values pass the filter, at fpp 0.01", name, falsePos, absentProbes)
			}
			if p == "req_str" || p == "req_i64" {
				checkDuckBloom(t, db, w.path, rg, p, lt, present)
			}
		}
	}
}

// checkDuckBloom asks DuckDB's parquet_bloom_probe about a few written
// values, which it must not exclude, and counts absent ones it keeps.
func checkDuckBloom(t *testing.T, db *duckdb.DB, path string, rg int, col string, lt *leafType, present map[string]bool) {
	k := 0
	for v := range present {
		if k++; k > 5 {
			break
		}
		lit := duckdb.Quote(v)
		if lt.name == "i64" {
			lit = "CAST(" + lit + " AS BIGINT)"
		}
		res, err := db.Run(fmt.Sprintf("SELECT bloom_filter_excludes FROM parquet_bloom_probe(%s, %s, %s) WHERE row_group_id = %d", duckdb.Quote(path), duckdb.Quote(col), lit, rg))
		if err != nil {
			t.Errorf("DuckDB parquet_bloom_probe: %v", err)
			return
		}
		if len(res.Rows) != 1 || res.Rows[0][0] != false {
			t.Errorf("row group %d %s: DuckDB's bloom probe excludes written value %q: %v", rg, col, v, res.Rows)
		}
	}
}

// collectLeaves adds the non-null leaf values at path of a canonical row.
func collectLeaves(v any, path []string, out map[string]bool) {
	switch x := v.(type) {
	case nil:
	case string:
		if len(path) == 0 {
			out[x] = true
		}
	case []any:
		for _, e := range x {
			if len(path) > 0 && (path[0] == "list" || path[0] == "key_value") {
				collectLeaves(e, path[1:], out)
			} else {
				collectLeaves(e, path, out)
			}
		}
	case map[string]any:
		if len(path) > 0 {
			if path[0] == "element" && len(path) == 1 {
				collectLeaves(x["element"], nil, out)
				return
			}
			collectLeaves(x[path[0]], path[1:], out)
		}
	}
}

// bloomValues returns a canonical value as parquet-go's value and as a
// function of arrow-go's hasher: both hash the PLAIN bytes of the physical
// value (BloomFilter.md).
func bloomValues(lt *leafType, v string) (pqgo.Value, func(arrowmeta.Hasher) uint64) {
	switch {
	case lt.kind == "UUID":
		b := orderKey(lt, v)
		return pqgo.FixedLenByteArrayValue(b), func(h arrowmeta.Hasher) uint64 { return arrowmeta.GetHash(h, parquet.FixedLenByteArray(b)) }
	case lt.physical == meta.TypeByteArray:
		return pqgo.ByteArrayValue([]byte(v)), func(h arrowmeta.Hasher) uint64 { return arrowmeta.GetHash(h, parquet.ByteArray(v)) }
	case lt.kind == "DATE":
		d, _ := time.Parse(time.DateOnly, v)
		days := int32(floorDiv(d.Unix(), 86400))
		return pqgo.Int32Value(days), func(h arrowmeta.Hasher) uint64 { return arrowmeta.GetHash(h, days) }
	case lt.kind == "TIMESTAMP":
		ts, _ := time.Parse("2006-01-02T15:04:05.999999999Z", v)
		u := unitsSinceEpoch(ts, lt.time.perSecond())
		return pqgo.Int64Value(u), func(h arrowmeta.Hasher) uint64 { return arrowmeta.GetHash(h, u) }
	case lt.physical == meta.TypeInt32:
		n, _ := strconv.ParseInt(v, 10, 32)
		return pqgo.Int32Value(int32(n)), func(h arrowmeta.Hasher) uint64 { return arrowmeta.GetHash(h, int32(n)) }
	}
	n, _ := strconv.ParseInt(v, 10, 64)
	return pqgo.Int64Value(n), func(h arrowmeta.Hasher) uint64 { return arrowmeta.GetHash(h, n) }
}

// probeValue makes the i-th probe value, in canonical form, unlikely to
// have been written.
func probeValue(lt *leafType, i int) string {
	switch {
	case lt.kind == "UUID":
		return fmt.Sprintf("00000000-0000-4000-8000-%012x", i+77)
	case lt.physical == meta.TypeByteArray:
		return fmt.Sprintf("absent-%d", i)
	case lt.kind == "DATE":
		return epoch.AddDate(0, 0, 1_000_000+i).Format(time.DateOnly)
	case lt.kind == "TIMESTAMP":
		return formatInstant(time.Date(2250, 1, 1, 0, 0, i, 123_000, time.UTC), true)
	}
	return strconv.Itoa(1_000_003*i + 17)
}

func allNil(vals []any) bool {
	for _, v := range vals {
		if v != nil {
			return false
		}
	}
	return true
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}
