package variant

import "testing"

// shredSeeds are JSON documents that reach every branch of shredding.
var shredSeeds = []string{
	`{"id":1,"price":1.5,"tags":["a","b"],"user":{"name":"x","age":3},"extra":[1,{}]}`,
	`{"id":"one","price":"free","tags":["a",1,null,[]],"user":"anon"}`,
	`{"id":null,"tags":[],"user":{},"m":[[{"k":true,"j":1}],[],[null,{"k":2}]]}`,
	`[{"id":1},{"id":2,"z":[1.25,2]}]`,
	`{"a":{"b":{"c":{"d":[1,2,{"e":"f"}]}}}}`,
	`123456789012345678901234567890`, `1e300`, `"s"`, `null`, `{}`, `[]`,
}

// FuzzShredRoundTrip shreds a Variant by the shape inferred from it and
// by a fixed shape, rebuilds it with Unshred, and checks that the result
// is the same JSON value.
func FuzzShredRoundTrip(f *testing.F) {
	for _, s := range shredSeeds {
		f.Add([]byte(s))
	}
	fixed, err := ParseShapePaths("$.id int64\n$.price decimal(9,2)\n$.tags[*] string\n$.user.name string\n$.user.age int8\n$.m[*][*].k boolean\n$.a.b.c.d[*] double")
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		md, val, err := FromJSON(doc)
		if err != nil {
			return
		}
		v, err := New(md, val)
		if err != nil {
			t.Fatalf("encoder output unreadable: %v", err)
		}
		want, err := v.AppendJSON(nil)
		if err != nil {
			t.Fatal(err)
		}
		in := NewInferrer(InferOptions{MinPresence: 0.01, MinTypeShare: 0.01})
		if err := in.Add(v); err != nil {
			t.Fatal(err)
		}
		inferred := in.Shape()
		if err := inferred.Check(); err != nil {
			t.Fatalf("inferred shape %s: %v", inferred.String(), err)
		}
		var b Builder
		for _, shape := range []*Shape{&inferred, &fixed} {
			tree := shredTree(t, shape, v)
			md2, val2, err := b.Unshred(nil, nil, v.Metadata(), &tree)
			if err != nil {
				t.Fatalf("shape %s: Unshred: %v", shape.String(), err)
			}
			got, err := AppendJSON(nil, md2, val2)
			if err != nil {
				t.Fatalf("shape %s: rebuilt Variant invalid: %v", shape.String(), err)
			}
			if !equalJSON(want, got) {
				t.Fatalf("shape %s: %s came back as %s", shape.String(), want, got)
			}
		}
	})
}

// FuzzShredUntrusted feeds arbitrary Variant bytes to the shredding and
// reconstruction code, which must return errors, never panic.
func FuzzShredUntrusted(f *testing.F) {
	for _, s := range shredSeeds {
		md, val, err := FromJSON([]byte(s))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(md, val)
	}
	shape, err := ParseShapePaths("$.id int64\n$.tags[*] string\n$.user.name string")
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, md, val []byte) {
		m, err := ParseMetadata(md)
		if err != nil {
			return
		}
		var b Builder
		// Residual bytes straight from a file.
		for _, s := range []Shredded{
			{Value: val},
			{Typed: Object, Value: val, Fields: []ShreddedField{{Name: "id", Shredded: Shredded{Value: val}}}},
			{Typed: Array, Elements: []Shredded{{Value: val}}},
		} {
			_, _, _ = b.Unshred(nil, nil, m, &s)
		}
		v, err := NewWithMetadata(m, val)
		if err != nil {
			return
		}
		found := make([]Value, len(shape.Fields))
		if shape.Match(v) {
			_, _, _ = shape.SplitObject(nil, v, found)
		}
		in := NewInferrer(InferOptions{})
		_ = in.Add(v)
		_ = in.Shape()
	})
}
