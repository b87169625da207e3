package rowgroup

// Filler is a Payload of another package that lets a Builder undo a failed
// value: Fill appends like Append, but on error may leave the row half
// appended, since the Builder takes the whole row back once instead of the
// payload and then the Builder each marking and undoing it. The Avro
// decoder (rowgroup/avrorow) is one.
type Filler interface {
	Payload
	// Fill adds the value's columns to the row being built; on error the
	// caller undoes them. The error is a *RecordError.
	Fill(value []byte) error
	// RowGroup returns the row group the payload appends to.
	RowGroup() *RowGroup
}

// outsideFiller is a Filler seen as one of this package's payloads. A
// Filler never fills the envelope: only EnvelopeFromJSON does.
type outsideFiller struct{ f Filler }

func (o outsideFiller) fill(value []byte, _ *recordUndo) error { return o.f.Fill(value) }
func (o outsideFiller) rowGroup() *RowGroup                    { return o.f.RowGroup() }
func (o outsideFiller) fillsEnvelope() bool                    { return false }

// Undo takes a record that failed half-way back out of a row group, for
// payloads of other packages: Begin before the record, Rollback after its
// error. It marks only the repeated columns, so a record costs less than
// with RowGroup.Mark. An Undo is for one row group, whose schema does not
// change.
type Undo struct {
	g *RowGroup
	u recordUndo
}

// NewUndo returns an Undo over g.
func NewUndo(g *RowGroup) *Undo {
	u := &Undo{g: g}
	u.u.init(g)
	return u
}

// Begin records the position before a record.
func (u *Undo) Begin() { u.u.begin(u.g) }

// Rollback truncates every column, and the row count, to the position
// Begin recorded.
func (u *Undo) Rollback() { u.u.rollback(u.g) }

// NewRecordError returns the RecordError of a payload of another package:
// Path and Offset as given, and an Error that is err's text alone, so err
// names the format and says where, as "avro record: f: ... (at byte 3)".
func NewRecordError(path string, offset int, err error) *RecordError {
	return &RecordError{Path: path, Offset: offset, Err: err, bare: true}
}

// AppendUUID parses a UUID in its canonical text form (8-4-4-4-12 hex
// digits, either case) and appends its 16 bytes to dst, as the JSON
// shredder fills a UUID column; shredders of other packages use it for
// theirs. On error dst is returned unchanged.
func AppendUUID(dst, src []byte) ([]byte, error) { return appendUUID(dst, src) }
