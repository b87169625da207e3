package reader

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/pqsink/pqsink/meta"
	"github.com/pqsink/pqsink/schema"
)

// Errors wrapped by the errors of this package, for use with errors.Is.
var (
	// ErrNotParquet means the input does not begin and end with the magic
	// bytes "PAR1".
	ErrNotParquet = errors.New("not a Parquet file")
	// ErrEncrypted means the file uses Parquet modular encryption, which
	// this package does not read.
	ErrEncrypted = errors.New("encrypted Parquet files are not supported")
	// ErrCorrupt means the file contradicts itself or the format: a length
	// or offset outside the bytes that back it, a malformed page, a count
	// that the data does not hold.
	ErrCorrupt = errors.New("corrupt file")
	// ErrChecksum means a page's CRC does not match its bytes.
	ErrChecksum = errors.New("page checksum mismatch")
	// ErrUnsupported means the file uses a feature this package does not
	// read, such as an unknown encoding or a column chunk in another file.
	ErrUnsupported = errors.New("unsupported feature")
)

// corrupt returns an error wrapping ErrCorrupt with the formatted message.
func corrupt(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrCorrupt, fmt.Sprintf(format, args...))
}

const (
	magic       = "PAR1"
	magicCrypto = "PARE"
	// tailSize is the footer length and the closing magic.
	tailSize = 8
)

// File is an open Parquet file: its validated footer and schema, and the
// reader the pages come from. A File is safe for concurrent use; the chunk
// readers and row iterators it returns are not.
type File struct {
	r      io.ReaderAt
	size   int64
	md     *meta.FileMetaData
	schema *schema.Schema
	opts   options

	// dictHeaderUncounted is set for files of writers known to leave the
	// dictionary page header out of a chunk's total_compressed_size.
	dictHeaderUncounted bool
}

// Open reads and validates the footer of the Parquet file of size bytes
// that r reads. It checks the magic bytes, the footer length, the schema,
// and that every row group has one chunk per leaf column with the leaf's
// physical type; the pages are read later, by ColumnChunk and Rows.
func Open(r io.ReaderAt, size int64, opts ...Option) (*File, error) {
	o := defaultOptions()
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return nil, fmt.Errorf("reader: %w", err)
		}
	}
	if size < int64(len(magic)+tailSize) {
		return nil, fmt.Errorf("reader: %w: file is %d bytes, shorter than the 12 bytes of magic and footer length", ErrNotParquet, size)
	}
	var head [4]byte
	if err := readAt(r, head[:], 0); err != nil {
		return nil, fmt.Errorf("reader: reading the magic at offset 0: %w", err)
	}
	var tail [tailSize]byte
	if err := readAt(r, tail[:], size-tailSize); err != nil {
		return nil, fmt.Errorf("reader: reading the footer length at offset %d: %w", size-tailSize, err)
	}
	switch {
	case string(tail[4:]) == magicCrypto || string(head[:]) == magicCrypto:
		return nil, fmt.Errorf("reader: %w (magic PARE)", ErrEncrypted)
	case string(head[:]) != magic:
		return nil, fmt.Errorf("reader: %w: file starts with %q, not %q", ErrNotParquet, head[:], magic)
	case string(tail[4:]) != magic:
		return nil, fmt.Errorf("reader: %w: file ends with %q, not %q", ErrNotParquet, tail[4:], magic)
	}
	footerLen := int64(binary.LittleEndian.Uint32(tail[:4]))
	footerStart := size - tailSize - footerLen
	if footerLen == 0 || footerStart < int64(len(magic)) {
		return nil, fmt.Errorf("reader: %w: footer length %d does not fit in a file of %d bytes", ErrCorrupt, footerLen, size)
	}
	// The footer's size is bounded by the file's, so this allocation is one
	// the input justifies.
	footer := make([]byte, footerLen)
	if err := readAt(r, footer, footerStart); err != nil {
		return nil, fmt.Errorf("reader: reading the %d-byte footer at offset %d: %w", footerLen, footerStart, err)
	}
	md := new(meta.FileMetaData)
	if _, err := md.Decode(footer); err != nil {
		return nil, fmt.Errorf("reader: %w: footer at offset %d: %w", ErrCorrupt, footerStart, err)
	}
	if md.EncryptionAlgorithm != nil {
		return nil, fmt.Errorf("reader: %w (plaintext footer with encrypted columns)", ErrEncrypted)
	}
	s, err := schema.FromElements(md.Schema)
	if err != nil {
		return nil, fmt.Errorf("reader: %w: %w", ErrCorrupt, err)
	}
	f := &File{r: r, size: size, md: md, schema: s, opts: o}
	if md.CreatedBy != nil {
		f.dictHeaderUncounted = parquetMRBefore129(*md.CreatedBy)
	}
	if err := f.validate(); err != nil {
		return nil, fmt.Errorf("reader: %w", err)
	}
	if err := checkShreddedTypes(s.Fields(), false); err != nil {
		return nil, fmt.Errorf("reader: %w", err)
	}
	return f, nil
}

// checkShreddedTypes refuses a file whose shredded VARIANT columns have a
// typed_value of a type that VariantShredding.md does not allow: the
// file is not valid, even where every value of that column is null, and
// saying so when it is opened beats failing at the first non-null value.
func checkShreddedTypes(nodes []*schema.Node, inVariant bool) error {
	for _, n := range nodes {
		in := inVariant || n.Logical.Kind == schema.Variant
		if n.IsLeaf() {
			if in && n.Name == "typed_value" {
				if err := checkShreddedType(n); err != nil {
					return err
				}
			}
			continue
		}
		if err := checkShreddedTypes(n.Fields, in); err != nil {
			return err
		}
	}
	return nil
}

// validate checks what the rest of the package relies on: every row group
// has one chunk per leaf, with metadata of the leaf's type, and row counts
// that are not negative.
func (f *File) validate() error {
	leaves := f.schema.Leaves()
	if f.md.NumRows < 0 {
		return corrupt("footer: negative row count %d", f.md.NumRows)
	}
	for i := range f.md.RowGroups {
		rg := &f.md.RowGroups[i]
		if rg.NumRows < 0 {
			return corrupt("row group %d: negative row count %d", i, rg.NumRows)
		}
		if len(leaves) == 0 && rg.NumRows > 0 {
			// Without columns nothing backs the rows, and a reader would
			// return as many empty records as the footer cares to claim.
			return corrupt("row group %d: %d rows but the schema has no columns", i, rg.NumRows)
		}
		if len(rg.Columns) != len(leaves) {
			return corrupt("row group %d: %d column chunks for %d leaf columns", i, len(rg.Columns), len(leaves))
		}
		for j := range rg.Columns {
			cc := &rg.Columns[j]
			where := func() string { return fmt.Sprintf("row group %d, column %s", i, leaves[j].PathString()) }
			if cc.CryptoMetadata != nil || cc.EncryptedColumnMetadata != nil {
				return fmt.Errorf("%s: %w (encrypted column)", where(), ErrEncrypted)
			}
			if cc.FilePath != nil && *cc.FilePath != "" {
				return fmt.Errorf("%s: %w: chunk stored in another file %q", where(), ErrUnsupported, *cc.FilePath)
			}
			cm := cc.MetaData
			if cm == nil {
				return corrupt("%s: no column metadata", where())
			}
			if cm.Type != leaves[j].Physical {
				return corrupt("%s: chunk has type %v, schema says %v", where(), cm.Type, leaves[j].Physical)
			}
			if len(cm.PathInSchema) > 0 && strings.Join(cm.PathInSchema, ".") != leaves[j].PathString() {
				return corrupt("%s: chunk's path_in_schema is %q", where(), strings.Join(cm.PathInSchema, "."))
			}
			if cm.NumValues < 0 || cm.TotalCompressedSize < 0 {
				return corrupt("%s: negative num_values %d or total_compressed_size %d", where(), cm.NumValues, cm.TotalCompressedSize)
			}
		}
	}
	return nil
}

// Metadata returns the decoded footer. It must not be modified.
func (f *File) Metadata() *meta.FileMetaData { return f.md }

// Schema returns the file's schema.
func (f *File) Schema() *schema.Schema { return f.schema }

// NumRows returns the number of rows the footer declares.
func (f *File) NumRows() int64 { return f.md.NumRows }

// NumRowGroups returns the number of row groups.
func (f *File) NumRowGroups() int { return len(f.md.RowGroups) }

// Size returns the file size given to Open.
func (f *File) Size() int64 { return f.size }

// chunkMeta returns the metadata of a column chunk, checking the indexes.
func (f *File) chunkMeta(rowGroup, column int) (*meta.ColumnChunk, error) {
	if rowGroup < 0 || rowGroup >= len(f.md.RowGroups) {
		return nil, fmt.Errorf("reader: row group %d out of range [0, %d)", rowGroup, len(f.md.RowGroups))
	}
	cols := f.md.RowGroups[rowGroup].Columns
	if column < 0 || column >= len(cols) {
		return nil, fmt.Errorf("reader: column %d out of range [0, %d)", column, len(cols))
	}
	return &cols[column], nil
}

// readRange reads length bytes at off, which must lie inside the file, for
// the thing named what.
func (f *File) readRange(what string, off, length int64) ([]byte, error) {
	if off < 0 || length < 0 || off > f.size || length > f.size-off {
		return nil, corrupt("%s: range [%d, %d+%d) outside the %d-byte file", what, off, off, length, f.size)
	}
	buf := make([]byte, length)
	if err := readAt(f.r, buf, off); err != nil {
		return nil, fmt.Errorf("%s: reading %d bytes at offset %d: %w", what, length, off, err)
	}
	return buf, nil
}

// readAt fills buf from r at off. A ReaderAt may report io.EOF along with a
// full buffer at the end of its input; that is success.
func readAt(r io.ReaderAt, buf []byte, off int64) error {
	n, err := r.ReadAt(buf, off)
	if n == len(buf) {
		return nil
	}
	if err == nil || err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return err
}

// maxDictHeaderSize bounds the size of a dictionary page header, for the
// PARQUET-816 allowance.
const maxDictHeaderSize = 100

// parquetMRBefore129 reports whether created_by names parquet-mr before
// 1.2.9, or parquet-mr without a version, whose chunk sizes leave out the
// dictionary page header (PARQUET-816).
func parquetMRBefore129(createdBy string) bool {
	app, rest, _ := strings.Cut(createdBy, " ")
	if app != "parquet-mr" {
		return false
	}
	rest, ok := strings.CutPrefix(rest, "version ")
	if !ok {
		return true
	}
	version, _, _ := strings.Cut(rest, " ")
	var v [3]int
	for i, part := range strings.SplitN(version, ".", 3) {
		n := 0
		for _, c := range part {
			if c < '0' || c > '9' {
				break
			}
			n = n*10 + int(c-'0')
			if n > 1<<20 {
				break
			}
		}
		v[i] = n
	}
	return v[0] < 1 || (v[0] == 1 && (v[1] < 2 || (v[1] == 2 && v[2] < 9)))
}
