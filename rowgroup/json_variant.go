package rowgroup

import (
	"github.com/pqsink/pqsink/internal/jsonscan"
	"github.com/pqsink/pqsink/variant"
)

// variantEncoder turns the JSON text of one value into Variant metadata
// and value bytes, keeping its buffers between records. The encoder is
// created on first use so that schemas without VARIANT columns pay nothing.
type variantEncoder struct {
	enc             *variant.Encoder
	metadata, value []byte
}

func (e *variantEncoder) encode(json []byte) (metadata, value []byte, err error) {
	if e.enc == nil {
		e.enc = variant.NewEncoder()
	}
	e.metadata, e.value, err = e.enc.AppendJSON(e.metadata[:0], e.value[:0], json)
	return e.metadata, e.value, err
}

// variant fills a VARIANT group, unshredded, from the value whose first
// token k was just read. JSON null becomes the Variant null here; an
// optional VARIANT field never gets here with null (it is a null group).
func (s *JSONShredder) variant(p *jsonPlan, rep uint8, k jsonscan.Kind) error {
	start := s.scan.Offset()
	raw, err := s.rawValue(k)
	if err != nil {
		return err
	}
	metadata, value, err := s.vars.encode(raw)
	if err != nil {
		return &RecordError{Offset: start, Err: err} // Shred fills in the path
	}
	p.metadata.AppendBytes(rep, metadata)
	p.variantValue.AppendBytes(rep, value)
	return nil
}
