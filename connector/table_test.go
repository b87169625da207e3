package connector

import (
	"maps"
	"strings"
	"testing"

	"github.com/pqsink/pqsink/archive"
	"github.com/pqsink/pqsink/config"
	"github.com/pqsink/pqsink/table"
)

// TestTableSettings: what the sink can put in a table's file paths is
// rendered as a path segment; the rest is refused at startup, naming the
// key.
func TestTableSettings(t *testing.T) {
	for _, tc := range []struct {
		name      string
		format    string
		path      string
		timeField string
		by        config.PartitionField
		segment   string // the partition field's segment; "" when refused
		err       string // part of the error when refused
	}{
		{name: "day", by: config.PartitionField{Transform: "day", Column: "_kafka.timestamp"}, segment: "_kafka_timestamp_day={record_time:2006-01-02}"},
		{name: "hour", by: config.PartitionField{Transform: "hour", Column: "_kafka.timestamp"}, segment: "_kafka_timestamp_hour={record_time:2006-01-02-15}"},
		{name: "month", by: config.PartitionField{Transform: "month", Column: "_kafka.timestamp"}, segment: "_kafka_timestamp_month={record_time:2006-01}"},
		{name: "year", by: config.PartitionField{Transform: "year", Column: "_kafka.timestamp"}, segment: "_kafka_timestamp_year={record_time:2006}"},
		{name: "identity of a field", by: config.PartitionField{Transform: "identity", Column: "user.country"}, segment: "user_country={field:user.country}"},
		{name: "identity of the partition", by: config.PartitionField{Transform: "identity", Column: "_kafka.partition"}, segment: "_kafka_partition={partition}"},
		{name: "identity of the topic", by: config.PartitionField{Transform: "identity", Column: "_kafka.topic"}, segment: "_kafka_topic={topic}"},
		{name: "bucket", by: config.PartitionField{Transform: "bucket", Param: 16, Column: "id"}, err: "table.partition_by: bucket[16](id): bucket is not supported"},
		{name: "truncate", by: config.PartitionField{Transform: "truncate", Param: 4, Column: "user"}, err: "truncate is not supported"},
		{name: "day of a field", by: config.PartitionField{Transform: "day", Column: "ts"}, err: "on _kafka.timestamp only"},
		{name: "identity of the offset", by: config.PartitionField{Transform: "identity", Column: "_kafka.offset"}, err: "_kafka.topic, _kafka.partition and payload fields only"},
		{name: "identity of a field in variant", format: "variant", by: config.PartitionField{Transform: "identity", Column: "user"}, err: "needs format.type json"},
		{name: "a path", path: "{topic}/{partition}/{first_offset}.parquet", err: "path: not used with a table"},
		{name: "time_field", timeField: "ts", err: "time_field: not supported with a table"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &config.Config{Path: archive.DefaultPath, TimeField: tc.timeField, Table: &config.Table{PartitionBy: []config.PartitionField{tc.by}}}
			c.Format.Type = "json"
			if tc.format != "" {
				c.Format.Type = tc.format
			}
			if tc.path != "" {
				c.Path = tc.path
			}
			err := tableSettings(c)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Errorf("error = %v, want one with %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			seg, err := partitionPart(c, tc.by)
			if err != nil || seg != tc.segment {
				t.Errorf("segment = %q (%v), want %q", seg, err, tc.segment)
			}
			// A file path of the table must be a valid template.
			if _, err := archive.Parse("kafka/t/data/"+seg+"/{topic}+{partition}+{first_offset}.parquet", true); err != nil {
				t.Error(err)
			}
		})
	}
}

// TestMergeProgress: the committer's union of two progress reports of a
// partition keeps the later committed offset and the later end of each
// path beyond it.
func TestMergeProgress(t *testing.T) {
	for _, tc := range []struct {
		name string
		p, q table.Progress
		want table.Progress
	}{
		{"later wins", table.Progress{Committed: 5, Paths: map[string]int64{"a": 9}}, table.Progress{Committed: 7, Paths: map[string]int64{"a": 12, "b": 8}},
			table.Progress{Committed: 7, Paths: map[string]int64{"a": 12, "b": 8}}},
		{"an older report does not go back", table.Progress{Committed: 7, Paths: map[string]int64{"a": 12}}, table.Progress{Committed: 3, Paths: map[string]int64{"a": 9, "c": 4}},
			table.Progress{Committed: 7, Paths: map[string]int64{"a": 12}}},
		{"paths below the offset go", table.Progress{Committed: 2, Paths: map[string]int64{"a": 4}}, table.Progress{Committed: 10, Paths: nil},
			table.Progress{Committed: 10, Paths: map[string]int64{}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := mergeProgress(tc.p, tc.q)
			if got.Committed != tc.want.Committed || !maps.Equal(got.Paths, tc.want.Paths) {
				t.Errorf("merge = %+v, want %+v", got, tc.want)
			}
		})
	}
}
