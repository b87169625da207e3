package reader

import (
	"encoding/binary"
	"hash/crc32"
	"testing"

	"github.com/pqsink/pqsink/meta"
	"github.com/pqsink/pqsink/schema"
	"github.com/pqsink/pqsink/writer/encoding"
)

// testChunk is one column chunk of a crafted file: a single data page of
// PLAIN values, uncompressed, with RLE levels.
type testChunk struct {
	rep, def []uint8
	vals     Values
	v2       bool
	dict     *Values // when set, vals are written as indices into it
	indices  []int32
}

// buildFile writes a Parquet file by hand, from meta and writer/encoding
// alone, so that tests can craft files the writer would never produce.
// header and footer, when set, may damage the structures before they are
// encoded.
func buildFile(t testing.TB, s *schema.Schema, rows int64, chunks []testChunk,
	header func(col int, h *meta.PageHeader), footer func(*meta.FileMetaData)) []byte {
	t.Helper()
	out := []byte(magic)
	rg := meta.RowGroup{NumRows: rows}
	for i, leaf := range s.Leaves() {
		c := chunks[i]
		start := int64(len(out))
		cm := &meta.ColumnMetaData{
			Type:         leaf.Physical,
			PathInSchema: leaf.Path,
			Codec:        meta.CodecUncompressed,
			Encodings:    []meta.Encoding{meta.EncodingPlain, meta.EncodingRLE},
		}
		if c.dict != nil {
			body := encodePlain(t, c.dict)
			h := meta.PageHeader{
				Type: meta.PageDictionary, UncompressedPageSize: int32(len(body)), CompressedPageSize: int32(len(body)),
				DictionaryPageHeader: &meta.DictionaryPageHeader{NumValues: int32(c.dict.Len()), Encoding: meta.EncodingPlain},
			}
			cm.DictionaryPageOffset = &start
			out = h.Append(out)
			out = append(out, body...)
		}
		var n int
		switch {
		case c.def != nil:
			n = len(c.def)
		case c.indices != nil:
			n = len(c.indices)
		default:
			n = c.vals.Len()
		}
		var values []byte
		enc := meta.EncodingPlain
		if c.dict != nil {
			enc = meta.EncodingRLEDictionary
			var err error
			if values, err = (encoding.RLEDictionary{}).EncodeInt32(nil, c.indices); err != nil {
				t.Fatal(err)
			}
		} else {
			values = encodePlain(t, &c.vals)
		}
		var repBytes, defBytes []byte
		if leaf.MaxRep > 0 {
			repBytes = encoding.AppendLevels(nil, c.rep, encoding.BitWidth(uint64(leaf.MaxRep)))
		}
		if leaf.MaxDef > 0 {
			defBytes = encoding.AppendLevels(nil, c.def, encoding.BitWidth(uint64(leaf.MaxDef)))
		}
		var body []byte
		h := meta.PageHeader{}
		if c.v2 {
			body = append(append(append(body, repBytes...), defBytes...), values...)
			nulls := 0
			for _, d := range c.def {
				if int(d) < leaf.MaxDef {
					nulls++
				}
			}
			recs := n
			if c.rep != nil {
				recs = 0
				for _, r := range c.rep {
					if r == 0 {
						recs++
					}
				}
			}
			no := false
			h.Type = meta.PageDataV2
			h.DataPageHeaderV2 = &meta.DataPageHeaderV2{
				NumValues: int32(n), NumNulls: int32(nulls), NumRows: int32(recs), Encoding: enc,
				DefinitionLevelsByteLength: int32(len(defBytes)), RepetitionLevelsByteLength: int32(len(repBytes)),
				IsCompressed: &no,
			}
		} else {
			if repBytes != nil {
				body = binary.LittleEndian.AppendUint32(body, uint32(len(repBytes)))
				body = append(body, repBytes...)
			}
			if defBytes != nil {
				body = binary.LittleEndian.AppendUint32(body, uint32(len(defBytes)))
				body = append(body, defBytes...)
			}
			body = append(body, values...)
			h.Type = meta.PageData
			h.DataPageHeader = &meta.DataPageHeader{
				NumValues: int32(n), Encoding: enc,
				DefinitionLevelEncoding: meta.EncodingRLE, RepetitionLevelEncoding: meta.EncodingRLE,
			}
		}
		h.UncompressedPageSize = int32(len(body))
		h.CompressedPageSize = int32(len(body))
		crc := int32(crc32.ChecksumIEEE(body))
		h.CRC = &crc
		if header != nil {
			header(i, &h)
		}
		cm.DataPageOffset = int64(len(out))
		if c.dict == nil {
			cm.DataPageOffset = start
		}
		out = h.Append(out)
		out = append(out, body...)
		cm.NumValues = int64(n)
		cm.TotalCompressedSize = int64(len(out)) - start
		cm.TotalUncompressedSize = cm.TotalCompressedSize
		rg.Columns = append(rg.Columns, meta.ColumnChunk{FileOffset: start, MetaData: cm})
		rg.TotalByteSize += cm.TotalCompressedSize
	}
	md := &meta.FileMetaData{Version: 2, Schema: s.Elements(), NumRows: rows, RowGroups: []meta.RowGroup{rg}}
	if footer != nil {
		footer(md)
	}
	start := len(out)
	out = md.Append(out)
	out = binary.LittleEndian.AppendUint32(out, uint32(len(out)-start))
	return append(out, magic...)
}

func encodePlain(t testing.TB, v *Values) []byte {
	t.Helper()
	var p encoding.Plain
	var out []byte
	var err error
	switch v.Type {
	case meta.TypeBoolean:
		out, err = p.EncodeBoolean(nil, v.Bool)
	case meta.TypeInt32:
		out, err = p.EncodeInt32(nil, v.Int32)
	case meta.TypeInt64:
		out, err = p.EncodeInt64(nil, v.Int64)
	case meta.TypeInt96:
		out, err = p.EncodeInt96(nil, v.Int96)
	case meta.TypeFloat:
		out, err = p.EncodeFloat(nil, v.Float)
	case meta.TypeDouble:
		out, err = p.EncodeDouble(nil, v.Double)
	case meta.TypeByteArray:
		out, err = p.EncodeByteArray(nil, v.Data, v.Offsets)
	case meta.TypeFixedLenByteArray:
		out, err = p.EncodeFixedLenByteArray(nil, v.Data, v.Size)
	}
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// byteArrays returns BYTE_ARRAY values holding ss.
func byteArrays(ss ...string) Values {
	v := Values{Type: meta.TypeByteArray, Offsets: []uint32{0}}
	for _, s := range ss {
		v.Data = append(v.Data, s...)
		v.Offsets = append(v.Offsets, uint32(len(v.Data)))
	}
	return v
}

func mustParse(t testing.TB, text string) *schema.Schema {
	t.Helper()
	s, err := schema.Parse(text)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
