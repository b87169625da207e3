package format_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/pqsink/pqsink/config"
	"github.com/pqsink/pqsink/format"
	"github.com/pqsink/pqsink/rowgroup"
	"github.com/pqsink/pqsink/schema"
)

// tagged is the small example format of docs/formats.md: each value is
// the byte 'T' and then a JSON object of one schema, shredded by the JSON
// shredder. A value without the tag is a decode rejection.
type tagged struct{ files *schema.Schema }

func openTagged(cfg *config.Config, _ format.Env) (format.Format, error) {
	s, err := schema.Parse(`message tagged { required binary user (STRING); optional int64 n; }`)
	if err != nil {
		return nil, err
	}
	return &tagged{files: s}, nil
}

func (f *tagged) FixedSchema() (*schema.Schema, error) { return f.files, nil }
func (f *tagged) TableSchema() (*schema.Schema, error) { return nil, nil }
func (f *tagged) SchemaPerRecord() bool                { return false }
func (f *tagged) Binary() bool                         { return false }
func (f *tagged) Fixed() *format.Schema                { return nil }
func (f *tagged) TextOptions() []rowgroup.JSONOption   { return nil }

func (f *tagged) NewDecoder(p format.Partition) format.Decoder {
	return &taggedDecoder{Fixed: format.Fixed{Schema: p.Schema, NewPayload: func(g *rowgroup.RowGroup) (rowgroup.Payload, error) {
		return rowgroup.NewJSONShredder(g)
	}, KeyValues: [][2]string{{"example.format", "tagged"}}}}
}

// taggedDecoder is a format.Fixed whose Decode takes the tag off.
type taggedDecoder struct{ format.Fixed }

func (x *taggedDecoder) Decode(_ context.Context, value []byte, _ int64) (format.Decoded, *format.Rejection, error) {
	if len(value) == 0 || value[0] != 'T' {
		return format.Decoded{}, &format.Rejection{Reason: format.RejectDecode, Err: errors.New("no tag")}, nil
	}
	return format.Decoded{Payload: value[1:], Text: value[1:]}, nil, nil
}

// TestExampleFormat runs the example format of docs/formats.md through
// the seam as the sink does: opened from a registry by format.type, a
// decoder per partition, buffers for a file, each value decoded and
// appended or rejected with a reason.
func TestExampleFormat(t *testing.T) {
	reg := format.NewRegistry()
	reg.Register("tagged", openTagged)
	if _, err := reg.Open(&config.Config{Format: config.Format{Type: "avro"}}, format.Env{}); err == nil || err.Error() != `format.type: "avro" is not one of tagged` {
		t.Errorf("an unregistered format: error %v", err)
	}
	f, err := reg.Open(&config.Config{Format: config.Format{Type: "tagged"}}, format.Env{})
	if err != nil {
		t.Fatal(err)
	}
	fixed, err := f.FixedSchema()
	if err != nil {
		t.Fatal(err)
	}
	dec := f.NewDecoder(format.Partition{Schema: fixed})
	var buf *format.Buffers
	for _, c := range []struct {
		value  string
		reason string // "": written
	}{
		{`T{"user":"ann","n":1}`, ""},
		{`{"user":"bob"}`, format.RejectDecode},
		{`T{"user":"cy"}`, ""},
		{`T{"n":3}`, format.RejectSchema}, // user is required
		{`T{"user":`, format.RejectDecode},
	} {
		t.Run(c.value, func(t *testing.T) {
			d, rej, err := dec.Decode(context.Background(), []byte(c.value), 0)
			if err != nil {
				t.Fatal(err)
			}
			if rej == nil {
				if buf == nil {
					if buf, err = dec.NewBuffers(d); err != nil {
						t.Fatal(err)
					}
				}
				b := dec.Fits(buf, d)
				if b == nil {
					t.Fatal("the file's buffers do not take a record of the one schema")
				}
				if err := b.Append(d.Payload, nil); err != nil {
					rej = &format.Rejection{Reason: dec.Reason(err), Err: err}
				}
			}
			got := ""
			if rej != nil {
				got = rej.Reason
			}
			if got != c.reason {
				t.Errorf("reason %q (%v), want %q", got, rej, c.reason)
			}
		})
	}
	if buf == nil || buf.Group.NumRows() != 2 {
		t.Fatalf("rows %v, want 2", buf)
	}
	if fmt.Sprint(buf.KeyValues) != "[[example.format tagged]]" {
		t.Errorf("footer entries %v", buf.KeyValues)
	}
}

// TestRegistry: names in registration order, and a name registered twice
// is a program error.
func TestRegistry(t *testing.T) {
	reg := format.NewRegistry()
	reg.Register("b", openTagged)
	reg.Register("a", openTagged)
	if got := fmt.Sprint(reg.Names()); got != "[b a]" {
		t.Errorf("names %s", got)
	}
	defer func() {
		if recover() == nil {
			t.Error("registering a name twice did not panic")
		}
	}()
	reg.Register("a", openTagged)
}
