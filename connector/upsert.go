package connector

import (
	"fmt"

	"github.com/pqsink/pqsink/config"
	"github.com/pqsink/pqsink/format"
)

// keyedFormat is f reading its records as changes to the rows of an
// upsert table (table.mode: upsert): by table.key, and format.envelope.
// A format that cannot, a key field its schema cannot give, or an
// envelope it does not read, is an error naming them.
func keyedFormat(f format.Format, cfg *config.Config) (format.Format, error) {
	kr, ok := f.(format.Keyer)
	if !ok {
		return nil, fmt.Errorf("table.mode: upsert: format.type %s cannot read its records as changes to keyed rows", cfg.Format.Type)
	}
	k, err := kr.Keyed(format.KeyOptions{Fields: cfg.Table.Key, Envelope: cfg.Format.Envelope})
	if err != nil {
		return nil, fmt.Errorf("table.mode upsert: %w", err)
	}
	return k, nil
}
