package archive

import "testing"

func TestRecordSchemaKey(t *testing.T) {
	for _, c := range []struct {
		key  string
		want bool
	}{
		{"avro.schema", true},
		{"avro.codec", false},
		{"json.schema", true},
		{"json.schema.references", true},
		{"json.schema.id", true},
		{"pqsink.protobuf.message", true},
		{"pqsink.protobuf.schema_id", true},
		{"pqsink.protobuf", false},
		{"pqsink.json.timestamp_units", false},
		{FooterTopic, false},
		{FooterRanges, false},
		{"", false},
	} {
		if got := RecordSchemaKey(c.key); got != c.want {
			t.Errorf("RecordSchemaKey(%q) = %v, want %v", c.key, got, c.want)
		}
	}
}
