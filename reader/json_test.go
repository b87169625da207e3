package reader

import (
	"encoding/binary"
	"math"
	"testing"

	"github.com/pqsink/pqsink/meta"
)

// TestLogicalJSON renders one value of every logical type.
func TestLogicalJSON(t *testing.T) {
	s := mustParse(t, `message m {
  required int32 u8 (INTEGER(8,false));
  required int64 u64 (INTEGER(64,false));
  required int32 dec4 (DECIMAL(9,3));
  required fixed_len_byte_array(5) decb (DECIMAL(10,4));
  required int32 date (DATE);
  required int32 tms (TIME(MILLIS,true));
  required int64 tns (TIME(NANOS,false));
  required int64 tsms (TIMESTAMP(MILLIS,true));
  required int64 tsus (TIMESTAMP(MICROS,false));
  required int64 tsns (TIMESTAMP(NANOS,true));
  required int96 i96;
  required fixed_len_byte_array(16) id (UUID);
  required fixed_len_byte_array(12) iv (INTERVAL);
  required fixed_len_byte_array(2) half (FLOAT16);
  required double nan;
  required float small;
  required binary blob;
  required binary text (STRING);
  required group m (MAP) {
    repeated group key_value {
      required int32 key;
      optional binary value (STRING);
    }
  }
}`)
	i32 := func(x ...int32) testChunk { return testChunk{vals: Values{Type: meta.TypeInt32, Int32: x}} }
	i64 := func(x ...int64) testChunk { return testChunk{vals: Values{Type: meta.TypeInt64, Int64: x}} }
	fixed := func(size int, b []byte) testChunk {
		return testChunk{vals: Values{Type: meta.TypeFixedLenByteArray, Size: size, Data: b}}
	}
	var i96 [12]byte
	binary.LittleEndian.PutUint64(i96[:], uint64(3600e9+1)) // 01:00:00.000000001
	binary.LittleEndian.PutUint32(i96[8:], 2440588+1)       // 1970-01-02
	iv := binary.LittleEndian.AppendUint32(nil, 14)         // months
	iv = binary.LittleEndian.AppendUint32(iv, 3)            // days
	iv = binary.LittleEndian.AppendUint32(iv, 4000)         // millis
	chunks := []testChunk{
		i32(-1), // 255 unsigned
		i64(-1),
		i32(-12345),
		fixed(5, []byte{0xff, 0xff, 0xff, 0xff, 0xfe}), // -2 → -0.0002
		i32(19000),
		i32(3723004),
		i64(1),
		i64(1700000000123),
		i64(-1),
		i64(1),
		{vals: Values{Type: meta.TypeInt96, Int96: [][12]byte{i96}}},
		fixed(16, []byte{0x12, 0x34, 0x56, 0x78, 0x9a, 0xbc, 0xde, 0xf0, 0, 1, 2, 3, 4, 5, 6, 7}),
		fixed(12, iv),
		fixed(2, []byte{0x00, 0x3e}), // 1.5
		{vals: Values{Type: meta.TypeDouble, Double: []float64{math.NaN()}}},
		{vals: Values{Type: meta.TypeFloat, Float: []float32{1e-7}}},
		{vals: byteArrays("\x00\xff")},
		{vals: byteArrays("tab\t\"q\" \xff")},
		{rep: []uint8{0, 1}, def: []uint8{1, 1}, vals: Values{Type: meta.TypeInt32, Int32: []int32{1, 2}}},
		{rep: []uint8{0, 1}, def: []uint8{1, 2}, vals: byteArrays("two")},
	}
	got, err := readBytes(buildFile(t, s, 1, chunks, nil, nil))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"u8":4294967295,"u64":18446744073709551615,"dec4":"-12.345","decb":"-0.0002","date":"2022-01-08",` +
		`"tms":"01:02:03.004","tns":"00:00:00.000000001","tsms":"2023-11-14T22:13:20.123Z","tsus":"1969-12-31T23:59:59.999999",` +
		`"tsns":"1970-01-01T00:00:00.000000001Z","i96":"1970-01-02T01:00:00.000000001",` +
		`"id":"12345678-9abc-def0-0001-020304050607","iv":{"months":14,"days":3,"millis":4000},"half":1.5,` +
		`"nan":"NaN","small":1e-7,"blob":"AP8=","text":"tab\t\"q\" \ufffd","m":[{"key":1,"value":null},{"key":2,"value":"two"}]}` + "\n"
	if string(got) != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}
