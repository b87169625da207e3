package encoding

import "testing"

func TestByID(t *testing.T) {
	// The ids and names of parquet.thrift's Encoding enum.
	for id, name := range map[int32]string{0: "PLAIN", 3: "RLE", 5: "DELTA_BINARY_PACKED", 6: "DELTA_LENGTH_BYTE_ARRAY", 7: "DELTA_BYTE_ARRAY", 9: "BYTE_STREAM_SPLIT"} {
		e, ok := ByID(id)
		if !ok || e.String() != name {
			t.Errorf("ByID(%d) = %v, %v; want %s", id, e, ok, name)
		}
	}
	for _, id := range []int32{1, 2, 4, 8, 10, -1} {
		if _, ok := ByID(id); ok {
			t.Errorf("ByID(%d) found a value encoding", id)
		}
	}
}
