package rowgroup

import (
	"testing"

	"github.com/pqsink/pqsink/variant"
)

// FuzzVariantShredder feeds arbitrary Variant bytes (as a Kafka record
// could carry) and JSON text to a shredder with nested shapes: it must
// accept or reject each, never panic, and leave the row group consistent.
func FuzzVariantShredder(f *testing.F) {
	for _, s := range []string{
		`{"id":1,"tags":["a",2],"u":{"n":1.5,"x":[1,{}]}}`,
		`{"id":"x","tags":"y","u":[]}`, `[{"id":1}]`, `null`, `{}`,
	} {
		md, val, err := variant.FromJSON([]byte(s))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(md, val, []byte(s))
	}
	// An object whose field id is beyond its dictionary: its header is
	// sound, so only a full check stops it before columns are written.
	f.Add([]byte{0x01, 0x00, 0x00}, []byte{0x02, 0x01, 0x00, 0x00, 0x01, 0x00}, []byte(`{}`))
	shape, err := variant.ParseShapePaths("$.id int64\n$.tags[*] string\n$.u.n decimal(9,2)\n$.u.x[*][*] boolean")
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, md, val, json []byte) {
		g, sh := variantGroup(t, shape)
		if err := sh.ShredVariant(md, val); err == nil && variant.Validate(md, val) != nil {
			t.Fatalf("accepted an invalid Variant")
		}
		_ = sh.ShredJSON(json)
		if err := g.Check(); err != nil {
			t.Fatalf("row group inconsistent: %v", err)
		}
	})
}
