package writer_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/pqsink/pqsink/meta"
	"github.com/pqsink/pqsink/rowgroup"
	"github.com/pqsink/pqsink/schema"
	"github.com/pqsink/pqsink/writer"
)

// writeFlat writes 3000 rows of flatSchema with opts.
func writeFlat(t *testing.T, opts ...writer.Option) []byte {
	t.Helper()
	s := schema.MustParse(flatSchema)
	g := rowgroup.New(s)
	fillFlat(g, 3000)
	var out bytes.Buffer
	w, err := writer.New(&out, s, opts...)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.WriteRowGroup(g); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// TestSettingsOptions: DefaultSettings writes the file no options write,
// and settings write the file of the options they stand for.
func TestSettingsOptions(t *testing.T) {
	custom := writer.DefaultSettings()
	custom.Codec = "ZSTD:3"
	custom.PageBytes = 4 << 10
	custom.PageRows = 500
	custom.PageVersion = 2
	custom.Dictionary = false
	custom.StatsTruncate = 8
	custom.BloomFilters = []string{"id", "name:0.001"}
	custom.ColumnCodecs = []writer.ColumnSetting{{Column: "name", Value: "lz4raw"}}
	custom.Encodings = []writer.ColumnSetting{{Column: "d", Value: "BYTE_STREAM_SPLIT"}}
	custom.NoDictionary = []string{"name"}
	custom.KeyValues = [][2]string{{"a", "1"}, {"b", "2"}}
	for _, tc := range []struct {
		name string
		set  writer.Settings
		want []writer.Option
	}{
		{"defaults", writer.DefaultSettings(), nil},
		{"custom", custom, []writer.Option{
			writer.Compression(meta.CodecZstd, 3), writer.PageSize(4 << 10), writer.PageRowLimit(500),
			writer.DataPageVersion(2), writer.Dictionary(false), writer.StatisticsTruncate(8),
			writer.BloomFilter("id", 0.01), writer.BloomFilter("name", 0.001),
			writer.ColumnCompression("name", meta.CodecLZ4Raw, 0), writer.ColumnEncoding("d", meta.EncodingByteStreamSplit),
			writer.ColumnDictionary("name", false), writer.KeyValue("a", "1"), writer.KeyValue("b", "2"),
		}},
	} {
		opts, err := tc.set.Options()
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got, want := writeFlat(t, opts...), writeFlat(t, tc.want...); !bytes.Equal(got, want) {
			t.Errorf("%s: the settings wrote %d bytes, the options %d, not the same", tc.name, len(got), len(want))
		}
	}
}

// TestSettingsErrors: a value that does not parse is a SettingError
// naming its setting.
func TestSettingsErrors(t *testing.T) {
	for _, tc := range []struct {
		setting string
		edit    func(*writer.Settings)
		want    string
	}{
		{"Codec", func(s *writer.Settings) { s.Codec = "zip" }, "unknown codec"},
		{"BloomFilters", func(s *writer.Settings) { s.BloomFilters = []string{"id:2"} }, "false-positive probability"},
		{"ColumnCodecs", func(s *writer.Settings) { s.ColumnCodecs = []writer.ColumnSetting{{Column: "id", Value: "snappy:3"}} }, "takes no compression level"},
		{"Encodings", func(s *writer.Settings) { s.Encodings = []writer.ColumnSetting{{Column: "id", Value: "zigzag"}} }, `unknown encoding "zigzag"`},
	} {
		set := writer.DefaultSettings()
		tc.edit(&set)
		_, err := set.Options()
		var se *writer.SettingError
		if !errors.As(err, &se) || se.Setting != tc.setting || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want a SettingError of %s saying %q", tc.setting, err, tc.setting, tc.want)
		}
	}
}
