package writer

import "unsafe"

// unsafeSlice reinterprets a slice of one fixed-size type as another of the
// same size (float32 ↔ uint32, uint64 ↔ int64), without copying.
func unsafeSlice[From, To any](s []From) []To {
	if len(s) == 0 {
		return nil
	}
	var f From
	var t To
	if unsafe.Sizeof(f) != unsafe.Sizeof(t) {
		panic("writer: unsafeSlice between types of different sizes")
	}
	return unsafe.Slice((*To)(unsafe.Pointer(unsafe.SliceData(s))), len(s))
}
