package format

import (
	"context"
	"log/slog"

	"github.com/pqsink/pqsink/config"
	"github.com/pqsink/pqsink/meta"
	"github.com/pqsink/pqsink/reader"
	"github.com/pqsink/pqsink/schema"
)

// ReplayDriver opens the replay side of a format for one run of replay
// (pqsink replay, package connector/source), which produces the records
// of the sink's files to a topic again. cfg is the replay's config: its
// format.* keys say where a schema comes from when a file's footer names
// it without holding it (format.registry, format.proto_file). A format's
// keys are checked when a file needs them, not here: a replay of other
// files does not need them.
type ReplayDriver func(cfg *config.Config, env ReplayEnv) Replayer

// ReplayEnv is what a replay gives the replayers it opens.
type ReplayEnv struct {
	// Log is the replay's logger.
	Log *slog.Logger
	// Registry is the target's Schema Registry, in which the schemas of
	// records that go out in its wire format are registered; nil without
	// one. A format that registers schemas of another type than Avro
	// asserts the methods it needs (internal/schemaregistry's Client has
	// RegisterSchema).
	Registry SchemaRegistrar
	// Subject is the subject they are registered under.
	Subject string
}

// SchemaRegistrar registers an Avro schema under a subject and returns its
// id, as POST /subjects/{subject}/versions of the Schema Registry does.
type SchemaRegistrar interface {
	Register(ctx context.Context, subject, schema string) (uint32, error)
}

// Replayer is the optional replay side of a format: it turns the rows of
// a file that the format's sink wrote back into record values, in the
// records' own encoding. A format without one has its files replayed as
// the sink's JSON (the payload's columns as a JSON object, or a VARIANT's
// JSON). Replay asks the replayers, in the order of registration, whether
// a file's footer is theirs; one Replayer serves every file of a replay,
// from several goroutines.
type Replayer interface {
	// Label names the format's records in messages: "Protobuf".
	Label() string
	// Claims returns the footer key that says a file whose footer
	// entries are kv holds the format's records, "" when it does not.
	Claims(kv []meta.KeyValue) string
	// Encoder returns the encoder of the records of a file the Replayer
	// claims. Files of the same schema may share one.
	Encoder(ctx context.Context, f ReplayFile) (RecordEncoder, error)
}

// ReplayFile is what a Replayer is told of a file.
type ReplayFile struct {
	// KV are the file's footer entries, or, for a file another engine
	// rewrote, those a sink's file of the same columns lent it.
	KV []meta.KeyValue
	// Payload are the file's top-level fields beside the _kafka
	// envelope.
	Payload []*schema.Node
}

// RecordEncoder writes the records of one file's rows.
type RecordEncoder interface {
	// AppendRecord appends to dst the value of the record whose row is
	// rec, a group of the file's columns (the envelope's among them).
	// On error, what it appended is dropped by the caller.
	AppendRecord(dst []byte, rec reader.Value) ([]byte, error)
}

// replayer is a registered ReplayDriver with its name.
type replayer struct {
	name string
	open ReplayDriver
}

// RegisterReplayer adds the replay side d of the format registered (or to
// be registered) under name; a name given twice panics, as a program
// error. Replay asks the replayers in the order of their registration.
func (r *Registry) RegisterReplayer(name string, d ReplayDriver) {
	for _, p := range r.replayers {
		if p.name == name {
			d = nil
		}
	}
	if d == nil {
		panic("format: RegisterReplayer of " + name + " twice or nil")
	}
	r.replayers = append(r.replayers, replayer{name, d})
}

// Replayers opens the registered replayers for one run of replay, in the
// order of their registration.
func (r *Registry) Replayers(cfg *config.Config, env ReplayEnv) []Replayer {
	if env.Log == nil {
		env.Log = slog.New(slog.DiscardHandler)
	}
	out := make([]Replayer, 0, len(r.replayers))
	for _, p := range r.replayers {
		out = append(out, p.open(cfg, env))
	}
	return out
}

// ColumnEncoder is what a RecordEncoder may also implement: it encodes
// the records of a row group column by column, without assembling rows,
// which is faster for wide records.
type ColumnEncoder interface {
	// Columns binds the encoder to the payload of row group g of f, with
	// the extra columns read under the same memory budget (replay's
	// envelope), whose cursors it returns in their order. An error
	// wrapping reader.ErrNotColumnar says the columns do not have the
	// shape it reads: replay reads the row group's rows instead.
	Columns(f *reader.File, g int, extra []int) (ColumnRecords, []*reader.ColumnCursor, error)
}

// ColumnRecords are the records of a row group, read column by column.
type ColumnRecords interface {
	// AppendNext appends the value of the next record to dst.
	AppendNext(dst []byte) ([]byte, error)
	// SkipNext consumes the next record.
	SkipNext() error
	// Release releases the cursors, the extra ones too.
	Release()
}
