package sinkbench

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/pqsink/pqsink/internal/events"
)

// workload is what the benchmark does for one format.type it runs: how
// the events are encoded into record values, and the keys of the sink's
// format section beside type.
type workload struct {
	// encoding names the record values' encoding in the report.
	encoding string
	// encode turns an event's JSON into its record value; nil: the JSON
	// is the value.
	encode func(event []byte) ([]byte, error)
	// formatKeys writes the format section's keys beside type into b,
	// with the files they name written under dir; nil: none.
	formatKeys func(b *strings.Builder, o Options, dir string) error
	// demoQuery is the DuckDB query `pqsink demo` shows for its table,
	// of the table's metadata file (the one %[1]s).
	demoQuery string
}

// workloadNames are the format.types the benchmark runs, in the order its
// errors name them.
var workloadNames = []string{"json", "variant", "protobuf"}

// workloads are the benchmark's workloads by format.type.
var workloads = map[string]workload{
	"json": {
		encoding: "JSON",
		formatKeys: func(b *strings.Builder, _ Options, dir string) error {
			path := filepath.Join(dir, "events.schema")
			if err := os.WriteFile(path, []byte(events.Schema), 0o644); err != nil {
				return err
			}
			fmt.Fprintf(b, "  schema_file: %s\n", path)
			return nil
		},
		demoQuery: "SELECT country, count(*) FROM iceberg_scan('%[1]s') GROUP BY ALL ORDER BY 2 DESC LIMIT 5",
	},
	"variant": {
		encoding: "JSON",
		formatKeys: func(b *strings.Builder, o Options, _ string) error {
			if o.Shred != "" {
				fmt.Fprintf(b, "  shred: %s\n", o.Shred)
			}
			return nil
		},
		demoQuery: "SELECT count(*) FROM iceberg_scan('%[1]s')",
	},
	"protobuf": {
		encoding: "Protobuf",
		encode:   func(event []byte) ([]byte, error) { return events.AppendProto(nil, event) },
		formatKeys: func(b *strings.Builder, _ Options, dir string) error {
			path := filepath.Join(dir, "event.proto")
			if err := os.WriteFile(path, []byte(events.ProtoSchema), 0o644); err != nil {
				return err
			}
			fmt.Fprintf(b, "  proto_file: %s\n  message: %s\n", path, events.ProtoMessage)
			return nil
		},
		demoQuery: "SELECT count(*) FROM iceberg_scan('%[1]s')",
	},
}

// DemoQuery returns the DuckDB query of a table of format's records whose
// metadata file is metadata.
func DemoQuery(format, metadata string) string {
	return fmt.Sprintf(workloads[format].demoQuery, metadata)
}
