package events

import (
	"encoding/json"
	"testing"
	"time"
)

func TestRecordsAreValidAndDeterministic(t *testing.T) {
	a, b := New(7, time.Unix(0, 0)), New(7, time.Unix(0, 0))
	var total int
	for i := range 1000 {
		x, y := a.Append(nil), b.Append(nil)
		if string(x) != string(y) {
			t.Fatalf("record %d differs between two generators of one seed", i)
		}
		var v struct {
			ID      int64
			Payload struct{ Nested struct{ Level int } }
		}
		if err := json.Unmarshal(x, &v); err != nil {
			t.Fatalf("record %d: %v: %s", i, err, x)
		}
		if v.ID != int64(i) {
			t.Fatalf("record %d has id %d", i, v.ID)
		}
		total += len(x)
	}
	if avg := total / 1000; avg < 170 || avg > 250 {
		t.Errorf("average record is %d bytes, want about 210", avg)
	}
}
