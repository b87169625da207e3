// Package crossread reads Parquet files with independent implementations —
// parquet-go/parquet-go and apache/arrow-go — and with pqsink's own reader,
// and reports each column chunk
// as repetition levels, definition levels and values, so tests can compare
// what those readers see with the row group pqsink wrote. Test-only: it
// lives under test/ rather than internal/ because it needs reader and
// rowgroup, and internal/ holds leaves that production code may import.
package crossread

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"os"

	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	pqgo "github.com/parquet-go/parquet-go"

	"github.com/pqsink/pqsink/meta"
	"github.com/pqsink/pqsink/reader"
	"github.com/pqsink/pqsink/rowgroup"
)

// Chunk is one column chunk as a reader saw it. Values are the non-null
// values in order, rendered by Key so that every reader's types compare.
type Chunk struct {
	Rep, Def []int
	Values   []string
}

// Key renders a value: integers in decimal, floats by their IEEE bits,
// booleans as true/false, byte arrays in hex.
func Key(v any) string {
	switch x := v.(type) {
	case bool:
		return fmt.Sprint(x)
	case int32, int64:
		return fmt.Sprint(x)
	case float32:
		return fmt.Sprintf("f%08x", math.Float32bits(x))
	case float64:
		return fmt.Sprintf("d%016x", math.Float64bits(x))
	case []byte:
		return fmt.Sprintf("%x", x)
	case [12]byte:
		return fmt.Sprintf("%x", x[:])
	}
	panic(fmt.Sprintf("crossread: no key for %T", v))
}

// FromRowGroup renders the row group pqsink wrote, for comparison.
func FromRowGroup(g *rowgroup.RowGroup) []Chunk {
	var out []Chunk
	for _, c := range g.Columns() {
		ch := Chunk{}
		for i := 0; i < c.NumLevels(); i++ {
			if c.MaxRep() > 0 {
				ch.Rep = append(ch.Rep, int(c.Rep[i]))
			}
			if c.MaxDef() > 0 {
				ch.Def = append(ch.Def, int(c.Def[i]))
			}
		}
		for i := 0; i < c.NumValues(); i++ {
			var v any
			switch c.Leaf.Physical {
			case meta.TypeBoolean:
				v = c.Bool[i]
			case meta.TypeInt32:
				v = c.Int32[i]
			case meta.TypeInt64:
				v = c.Int64[i]
			case meta.TypeInt96:
				v = c.Int96[i]
			case meta.TypeFloat:
				v = c.Float[i]
			case meta.TypeDouble:
				v = c.Double[i]
			case meta.TypeByteArray:
				v = c.ByteArray(i)
			case meta.TypeFixedLenByteArray:
				w := int(c.Leaf.Length)
				v = c.Bytes[i*w : (i+1)*w]
			}
			ch.Values = append(ch.Values, Key(v))
		}
		out = append(out, ch)
	}
	return out
}

// ParquetGo reads every column chunk of the file with parquet-go.
func ParquetGo(path string) ([][]Chunk, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	f, err := pqgo.OpenFile(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return nil, fmt.Errorf("parquet-go: open: %w", err)
	}
	leaves := f.Schema().Columns()
	var out [][]Chunk
	for ri, rg := range f.RowGroups() {
		var chunks []Chunk
		for ci, cc := range rg.ColumnChunks() {
			leaf, _ := f.Schema().Lookup(leaves[ci]...)
			maxRep, maxDef := leaf.MaxRepetitionLevel, leaf.MaxDefinitionLevel
			ch := Chunk{}
			pages := cc.Pages()
			buf := make([]pqgo.Value, 1024)
			for {
				p, err := pages.ReadPage()
				if err == io.EOF {
					break
				}
				if err != nil {
					pages.Close()
					return nil, fmt.Errorf("parquet-go: row group %d column %d: %w", ri, ci, err)
				}
				vr := p.Values()
				for {
					n, err := vr.ReadValues(buf)
					for _, v := range buf[:n] {
						if maxRep > 0 {
							ch.Rep = append(ch.Rep, v.RepetitionLevel())
						}
						if maxDef > 0 {
							ch.Def = append(ch.Def, v.DefinitionLevel())
						}
						if v.IsNull() {
							continue
						}
						ch.Values = append(ch.Values, pqgoKey(v))
					}
					if err == io.EOF {
						break
					}
					if err != nil {
						pages.Close()
						return nil, fmt.Errorf("parquet-go: row group %d column %d: %w", ri, ci, err)
					}
				}
				pqgo.Release(p)
			}
			pages.Close()
			chunks = append(chunks, ch)
		}
		out = append(out, chunks)
	}
	return out, nil
}

func pqgoKey(v pqgo.Value) string {
	switch v.Kind() {
	case pqgo.Boolean:
		return Key(v.Boolean())
	case pqgo.Int32:
		return Key(v.Int32())
	case pqgo.Int64:
		return Key(v.Int64())
	case pqgo.Int96:
		i := v.Int96()
		var b [12]byte
		for k, w := range i {
			b[4*k], b[4*k+1], b[4*k+2], b[4*k+3] = byte(w), byte(w>>8), byte(w>>16), byte(w>>24)
		}
		return Key(b)
	case pqgo.Float:
		return Key(v.Float())
	case pqgo.Double:
		return Key(v.Double())
	}
	return Key(v.ByteArray())
}

// Arrow reads every column chunk of the file with arrow-go's low-level
// column readers.
func Arrow(path string) (out [][]Chunk, err error) {
	defer func() {
		// arrow-go panics on some encodings it lacks (DELTA_BYTE_ARRAY on
		// FIXED_LEN_BYTE_ARRAY): report that as the reader's error.
		if p := recover(); p != nil {
			out, err = nil, fmt.Errorf("arrow-go: panic: %v", p)
		}
	}()
	r, err := file.OpenParquetFile(path, false)
	if err != nil {
		return nil, fmt.Errorf("arrow-go: open: %w", err)
	}
	defer r.Close()
	for ri := 0; ri < r.NumRowGroups(); ri++ {
		rg := r.RowGroup(ri)
		var chunks []Chunk
		for ci := 0; ci < rg.NumColumns(); ci++ {
			cr, err := rg.Column(ci)
			if err != nil {
				return nil, fmt.Errorf("arrow-go: row group %d column %d: %w", ri, ci, err)
			}
			ch, err := readArrowChunk(cr)
			if err != nil {
				return nil, fmt.Errorf("arrow-go: row group %d column %d: %w", ri, ci, err)
			}
			chunks = append(chunks, ch)
		}
		out = append(out, chunks)
	}
	return out, nil
}

const batch = 4096

func readArrowChunk(cr file.ColumnChunkReader) (Chunk, error) {
	desc := cr.Descriptor()
	maxRep, maxDef := desc.MaxRepetitionLevel(), desc.MaxDefinitionLevel()
	ch := Chunk{}
	def := make([]int16, batch)
	rep := make([]int16, batch)
	levels := func(total int64) {
		for i := 0; i < int(total); i++ {
			if maxRep > 0 {
				ch.Rep = append(ch.Rep, int(rep[i]))
			}
			if maxDef > 0 {
				ch.Def = append(ch.Def, int(def[i]))
			}
		}
	}
	for {
		var total int64
		var n int
		var err error
		switch c := cr.(type) {
		case *file.BooleanColumnChunkReader:
			vals := make([]bool, batch)
			total, n, err = c.ReadBatch(batch, vals, def, rep)
			for _, v := range vals[:n] {
				ch.Values = append(ch.Values, Key(v))
			}
		case *file.Int32ColumnChunkReader:
			vals := make([]int32, batch)
			total, n, err = c.ReadBatch(batch, vals, def, rep)
			for _, v := range vals[:n] {
				ch.Values = append(ch.Values, Key(v))
			}
		case *file.Int64ColumnChunkReader:
			vals := make([]int64, batch)
			total, n, err = c.ReadBatch(batch, vals, def, rep)
			for _, v := range vals[:n] {
				ch.Values = append(ch.Values, Key(v))
			}
		case *file.Int96ColumnChunkReader:
			vals := make([]parquet.Int96, batch)
			total, n, err = c.ReadBatch(batch, vals, def, rep)
			for _, v := range vals[:n] {
				ch.Values = append(ch.Values, Key([12]byte(v)))
			}
		case *file.Float32ColumnChunkReader:
			vals := make([]float32, batch)
			total, n, err = c.ReadBatch(batch, vals, def, rep)
			for _, v := range vals[:n] {
				ch.Values = append(ch.Values, Key(v))
			}
		case *file.Float64ColumnChunkReader:
			vals := make([]float64, batch)
			total, n, err = c.ReadBatch(batch, vals, def, rep)
			for _, v := range vals[:n] {
				ch.Values = append(ch.Values, Key(v))
			}
		case *file.ByteArrayColumnChunkReader:
			vals := make([]parquet.ByteArray, batch)
			total, n, err = c.ReadBatch(batch, vals, def, rep)
			for _, v := range vals[:n] {
				ch.Values = append(ch.Values, Key([]byte(v)))
			}
		case *file.FixedLenByteArrayColumnChunkReader:
			vals := make([]parquet.FixedLenByteArray, batch)
			total, n, err = c.ReadBatch(batch, vals, def, rep)
			for _, v := range vals[:n] {
				ch.Values = append(ch.Values, Key([]byte(v)))
			}
		default:
			return ch, fmt.Errorf("unexpected column reader %T", cr)
		}
		if err != nil {
			return ch, err
		}
		levels(total)
		if total == 0 {
			return ch, nil
		}
	}
}

// PQSink reads every column chunk of the file with pqsink's own reader,
// page by page, for comparison with the independent readers above.
func PQSink(path string) ([][]Chunk, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	st, err := fh.Stat()
	if err != nil {
		return nil, err
	}
	f, err := reader.Open(fh, st.Size())
	if err != nil {
		return nil, fmt.Errorf("pqsink: open: %w", err)
	}
	var out [][]Chunk
	for ri := 0; ri < f.NumRowGroups(); ri++ {
		var chunks []Chunk
		for ci := range f.Schema().Leaves() {
			cr, err := f.ColumnChunk(ri, ci)
			if err != nil {
				return nil, fmt.Errorf("pqsink: row group %d column %d: %w", ri, ci, err)
			}
			ch := Chunk{}
			for {
				p, err := cr.Next()
				if err == io.EOF {
					break
				}
				if err != nil {
					return nil, fmt.Errorf("pqsink: row group %d column %d: %w", ri, ci, err)
				}
				for _, l := range p.Rep {
					ch.Rep = append(ch.Rep, int(l))
				}
				for _, l := range p.Def {
					ch.Def = append(ch.Def, int(l))
				}
				v := &p.Values
				for i := 0; i < v.Len(); i++ {
					switch v.Type {
					case meta.TypeBoolean:
						ch.Values = append(ch.Values, Key(v.Bool[i]))
					case meta.TypeInt32:
						ch.Values = append(ch.Values, Key(v.Int32[i]))
					case meta.TypeInt64:
						ch.Values = append(ch.Values, Key(v.Int64[i]))
					case meta.TypeInt96:
						ch.Values = append(ch.Values, Key(v.Int96[i]))
					case meta.TypeFloat:
						ch.Values = append(ch.Values, Key(v.Float[i]))
					case meta.TypeDouble:
						ch.Values = append(ch.Values, Key(v.Double[i]))
					default:
						ch.Values = append(ch.Values, Key(v.Bytes(i)))
					}
				}
			}
			chunks = append(chunks, ch)
		}
		out = append(out, chunks)
	}
	return out, nil
}
