package test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/pqsink/pqsink/convert"
	pqreader "github.com/pqsink/pqsink/reader"
	"github.com/pqsink/pqsink/variant"
)

// TestVariantDecimalScaleRoundTrip shreds numbers of mixed scales, with
// the inferred shape and with decimal shapes of every scale among them,
// and wants each record's JSON back as it went in: a number goes to the
// typed column only when that column has its own scale, and stays in the
// value column otherwise (0.2894365736814082 once came back from a
// DECIMAL(18,17) column as 0.28943657368140820).
func TestVariantDecimalScaleRoundTrip(t *testing.T) {
	nums := []string{
		"0.2894365736814082", "0.28943657368140820", "0.12345678901234567", "1.5", "1.50", "1.500",
		"12", "-12", "0", "0.0", "-0.001", "100.25", "99999999999999.9999", "12345678901234567890",
	}
	var lines []string
	for i := range 600 {
		n := nums[i%len(nums)]
		lines = append(lines, fmt.Sprintf(`{"a":%s,"i":%d,"l":[%s,%s]}`, n, i, n, nums[(i+3)%len(nums)]))
	}
	shapes := map[string]*variant.Shape{"inferred": nil}
	for _, sc := range []uint8{0, 1, 2, 3, 4, 16, 17} {
		dec := variant.Shape{Type: variant.Decimal16, Precision: 38, Scale: sc}
		if sc <= 2 {
			dec = variant.Shape{Type: variant.Decimal8, Precision: 18, Scale: sc}
		}
		shapes[fmt.Sprintf("decimal(%d,%d)", dec.Precision, sc)] = &variant.Shape{Type: variant.Object, Fields: []variant.ShapeField{
			{Name: "a", Shape: dec},
			{Name: "i", Shape: variant.Shape{Type: variant.Int64}},
			{Name: "l", Shape: variant.Shape{Type: variant.Array, Element: &dec}},
		}}
	}
	// Mostly one scale, for inference to pick it: the others stay in value.
	var mostly []string
	for i := range 600 {
		n := fmt.Sprintf("%d.%02d", i, i%100)
		if i%25 == 0 {
			n = nums[i/25%len(nums)]
		}
		mostly = append(mostly, fmt.Sprintf(`{"a":%s,"i":%d,"l":[%s]}`, n, i, n))
	}
	for name, shape := range shapes {
		for input, ls := range map[string][]string{"mixed": lines, "mostly-scale-2": mostly} {
			t.Run(name+"/"+input, func(t *testing.T) {
				var verbose, out bytes.Buffer
				opts := convert.VariantOptions{Shape: shape, Verbose: &verbose}
				if _, err := convert.RunVariant(context.Background(), strings.NewReader(strings.Join(ls, "\n")), &out, opts); err != nil {
					t.Fatal(err)
				}
				f, err := pqreader.Open(bytes.NewReader(out.Bytes()), int64(out.Len()))
				if err != nil {
					t.Fatal(err)
				}
				rows, err := f.Rows()
				if err != nil {
					t.Fatal(err)
				}
				for i, want := range ls {
					rec, err := rows.Next()
					if err != nil {
						t.Fatalf("record %d: %v", i, err)
					}
					payload, _ := rec.Field("payload")
					if got := string(payload.AppendJSON(nil)); got != want {
						t.Fatalf("record %d: got %s, want %s (%s)", i, got, want, strings.SplitN(verbose.String(), "\n", 2)[0])
					}
				}
				if input == "mostly-scale-2" && shape == nil && !strings.Contains(verbose.String(), `"a": decimal4(9,2)`) {
					t.Errorf("inferred %s, want a decimal of scale 2 for a", strings.SplitN(verbose.String(), "\n", 2)[0])
				}
			})
		}
	}
}
