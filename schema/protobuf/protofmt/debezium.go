package protofmt

import (
	"errors"
	"fmt"
	"math"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/pqsink/pqsink/format"
)

// Debezium change events in Protobuf, as Confluent's ProtobufConverter
// writes them: the registry's message is the envelope's, with fields
// before and after (the row's message), source (a message with ts_ms),
// op and ts_ms (each a scalar, or its google.protobuf wrapper). The
// files' rows are after's message with one more field, _cdc (a message
// of op, a string, and ts, a google.protobuf.Timestamp), numbered past
// the row's own, so that the decoder the files are written with reads
// them as any message: a message's bytes are its fields' in any order, so
// a row's payload is after's bytes with the _cdc field's appended.

// cdcFile is the file of the _cdc field's message.
const (
	cdcFile    = "pqsink/cdc.proto"
	cdcMessage = "pqsink.cdc.CDC"
)

// eventFields are the field numbers of an envelope's members (0 when it
// has none), and whether op and ts_ms are wrapped in a message.
type eventFields struct {
	before, after, source, op, ts protowire.Number
	sourceTS                      protowire.Number
	opWrapped, tsWrapped          bool
	sourceTSWrapped               bool
	// cdc is the number of the row's _cdc field.
	cdc protowire.Number
}

// debeziumRow returns the files' row message of Debezium envelope env:
// its after field's message with a _cdc field, and where env's members
// are. An envelope without after of a message type, or whose before is
// of another type, op not a string and ts_ms not an integer, is an
// error, as is a row with a field _cdc.
func debeziumRow(env protoreflect.MessageDescriptor) (protoreflect.MessageDescriptor, *eventFields, error) {
	ev := &eventFields{}
	fields := env.Fields()
	after := fields.ByName("after")
	if after == nil || after.Kind() != protoreflect.MessageKind || after.IsList() || after.IsMap() {
		return nil, nil, fmt.Errorf("message %s is not a Debezium envelope: no field after of a message type", env.FullName())
	}
	row := after.Message()
	ev.after = after.Number()
	if before := fields.ByName("before"); before != nil {
		if before.Kind() != protoreflect.MessageKind || before.IsList() || before.IsMap() || before.Message().FullName() != row.FullName() {
			return nil, nil, fmt.Errorf("debezium envelope %s: before is not a %s, as after is", env.FullName(), row.FullName())
		}
		ev.before = before.Number()
	}
	op := fields.ByName("op")
	if op == nil {
		return nil, nil, fmt.Errorf("message %s is not a Debezium envelope: no field op", env.FullName())
	}
	var err error
	if ev.op, ev.opWrapped, err = scalarField(op, "google.protobuf.StringValue", protoreflect.StringKind); err != nil {
		return nil, nil, fmt.Errorf("debezium envelope %s: %w", env.FullName(), err)
	}
	if ts := fields.ByName("ts_ms"); ts != nil {
		if ev.ts, ev.tsWrapped, err = scalarField(ts, "google.protobuf.Int64Value", protoreflect.Int64Kind); err != nil {
			return nil, nil, fmt.Errorf("debezium envelope %s: %w", env.FullName(), err)
		}
	}
	if src := fields.ByName("source"); src != nil && src.Kind() == protoreflect.MessageKind && !src.IsList() && !src.IsMap() {
		if ts := src.Message().Fields().ByName("ts_ms"); ts != nil {
			if ev.sourceTS, ev.sourceTSWrapped, err = scalarField(ts, "google.protobuf.Int64Value", protoreflect.Int64Kind); err != nil {
				return nil, nil, fmt.Errorf("debezium envelope %s: source.%w", env.FullName(), err)
			}
			ev.source = src.Number()
		}
	}
	if row.Fields().ByName(format.CDCField) != nil {
		return nil, nil, fmt.Errorf("debezium: the row %s has a field %s, the change events' column", row.FullName(), format.CDCField)
	}
	withCDC, num, err := addCDC(row)
	if err != nil {
		return nil, nil, fmt.Errorf("debezium: the row %s: %w", row.FullName(), err)
	}
	ev.cdc = num
	return withCDC, ev, nil
}

// scalarField checks that fd is a singular scalar of kind (or, for
// int64, another varint integer kind) or the wrapper message wrapper.
func scalarField(fd protoreflect.FieldDescriptor, wrapper protoreflect.FullName, kind protoreflect.Kind) (protowire.Number, bool, error) {
	if fd.IsList() || fd.IsMap() {
		return 0, false, fmt.Errorf("%s is repeated", fd.Name())
	}
	if fd.Kind() == protoreflect.MessageKind {
		if fd.Message().FullName() != wrapper {
			return 0, false, fmt.Errorf("%s is a %s, not a %s", fd.Name(), fd.Message().FullName(), kind)
		}
		return fd.Number(), true, nil
	}
	ok := fd.Kind() == kind
	if kind == protoreflect.Int64Kind {
		switch fd.Kind() {
		case protoreflect.Int32Kind, protoreflect.Uint32Kind, protoreflect.Uint64Kind: // varints as int64's
			ok = true
		}
	}
	if !ok {
		return 0, false, fmt.Errorf("%s is a %s, not a %s", fd.Name(), fd.Kind(), kind)
	}
	return fd.Number(), false, nil
}

// addCDC returns a copy of message row with a field _cdc of message
// cdcMessage, and the field's number: one past the highest number the
// row uses or reserves (past the implementation's reserved range).
func addCDC(row protoreflect.MessageDescriptor) (protoreflect.MessageDescriptor, protowire.Number, error) {
	var path []int // the row's indexes from its file down
	for d := protoreflect.Descriptor(row); ; d = d.Parent() {
		if _, ok := d.(protoreflect.FileDescriptor); ok {
			break
		}
		path = append([]int{d.Index()}, path...)
	}
	file := row.ParentFile()
	fdp := protodesc.ToFileDescriptorProto(file)
	msg := fdp.MessageType[path[0]]
	for _, i := range path[1:] {
		msg = msg.NestedType[i]
	}
	var top int32
	for _, f := range msg.Field {
		top = max(top, f.GetNumber())
	}
	for _, r := range msg.ReservedRange {
		top = max(top, r.GetEnd()-1)
	}
	for _, r := range msg.ExtensionRange {
		top = max(top, r.GetEnd()-1)
	}
	num := top + 1
	if num >= int32(protowire.FirstReservedNumber) && num <= int32(protowire.LastReservedNumber) {
		num = int32(protowire.LastReservedNumber) + 1
	}
	if num > int32(protowire.MaxValidNumber) {
		return nil, 0, errors.New("no field number is left for the _cdc field")
	}
	msg.Field = append(msg.Field, &descriptorpb.FieldDescriptorProto{
		Name: ptr(format.CDCField), Number: ptr(num), JsonName: ptr("_cdc"),
		Label: descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL.Enum(),
		Type:  descriptorpb.FieldDescriptorProto_TYPE_MESSAGE.Enum(), TypeName: ptr("." + cdcMessage),
	})
	fdp.Dependency = append(fdp.Dependency, cdcFile)

	// The copy resolves against the file's own imports, and the CDC
	// message's file, built on their Timestamp when they have one.
	files := &protoregistry.Files{}
	if err := registerImports(files, file, map[string]bool{}); err != nil {
		return nil, 0, err
	}
	if _, err := files.FindFileByPath("google/protobuf/timestamp.proto"); err != nil {
		if err := files.RegisterFile(timestamppb.File_google_protobuf_timestamp_proto); err != nil {
			return nil, 0, err
		}
	}
	cdc, err := protodesc.NewFile(cdcFileProto(), files)
	if err != nil {
		return nil, 0, err
	}
	if err := files.RegisterFile(cdc); err != nil {
		return nil, 0, err
	}
	out, err := protodesc.NewFile(fdp, files)
	if err != nil {
		return nil, 0, err
	}
	md := out.Messages().Get(path[0])
	for _, i := range path[1:] {
		md = md.Messages().Get(i)
	}
	return md, protowire.Number(num), nil
}

// registerImports registers the files fd imports, transitively.
func registerImports(files *protoregistry.Files, fd protoreflect.FileDescriptor, seen map[string]bool) error {
	imports := fd.Imports()
	for i := range imports.Len() {
		imp := imports.Get(i).FileDescriptor
		if seen[imp.Path()] || imp.Path() == cdcFile {
			continue
		}
		seen[imp.Path()] = true
		if err := registerImports(files, imp, seen); err != nil {
			return err
		}
		if err := files.RegisterFile(imp); err != nil {
			return fmt.Errorf("import %s: %w", imp.Path(), err)
		}
	}
	return nil
}

func cdcFileProto() *descriptorpb.FileDescriptorProto {
	return &descriptorpb.FileDescriptorProto{
		Name: ptr(cdcFile), Package: ptr("pqsink.cdc"), Syntax: ptr("proto3"),
		Dependency: []string{"google/protobuf/timestamp.proto"},
		MessageType: []*descriptorpb.DescriptorProto{{
			Name: ptr("CDC"),
			Field: []*descriptorpb.FieldDescriptorProto{
				{Name: ptr("op"), Number: ptr(int32(1)), JsonName: ptr("op"), Label: descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL.Enum(),
					Type: descriptorpb.FieldDescriptorProto_TYPE_STRING.Enum()},
				{Name: ptr("ts"), Number: ptr(int32(2)), JsonName: ptr("ts"), Label: descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL.Enum(),
					Type: descriptorpb.FieldDescriptorProto_TYPE_MESSAGE.Enum(), TypeName: ptr(".google.protobuf.Timestamp")},
			},
		}},
	}
}

func ptr[T any](v T) *T { return &v }

// protoEvent is a Debezium event read from its Protobuf bytes: before and
// after as the row's bytes within the value (has* when present).
type protoEvent struct {
	op                  string
	before, after       []byte
	hasBefore, hasAfter bool
	ts                  int64
	hasTS               bool
}

// maxMillis bounds a change's time so that it holds in nanoseconds.
const maxMillis = math.MaxInt64 / 1_000_000

// readEvent reads the event of an envelope whose members are at ev from
// b. A member of the wrong wire type, bytes cut short, or a time past the
// range of a timestamp is an error. A message member given twice is the
// merge of both, as Protobuf decodes it: the last one here, or their
// bytes back to back when that would differ (into scratch).
func readEvent(ev *eventFields, b []byte, scratch []byte) (protoEvent, []byte, error) {
	var e protoEvent
	var eventTS int64
	var hasEventTS bool
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return e, scratch, fmt.Errorf("debezium: %w", protowire.ParseError(n))
		}
		b = b[n:]
		switch num {
		case ev.before, ev.after:
			if typ != protowire.BytesType {
				return e, scratch, fmt.Errorf("debezium: field %d is not a message", num)
			}
			v, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return e, scratch, fmt.Errorf("debezium: %w", protowire.ParseError(n))
			}
			b = b[n:]
			if num == ev.before {
				if e.hasBefore {
					scratch = append(append(scratch[:0], e.before...), v...)
					v = scratch
				}
				e.before, e.hasBefore = v, true
			} else {
				if e.hasAfter {
					v = append(append([]byte(nil), e.after...), v...)
				}
				e.after, e.hasAfter = v, true
			}
			continue
		case ev.op:
			v, n, err := stringField(b, typ, ev.opWrapped)
			if err != nil {
				return e, scratch, fmt.Errorf("debezium op: %w", err)
			}
			b, e.op = b[n:], v
			continue
		case ev.ts:
			v, n, err := intField(b, typ, ev.tsWrapped)
			if err != nil {
				return e, scratch, fmt.Errorf("debezium ts_ms: %w", err)
			}
			b, eventTS, hasEventTS = b[n:], v, true
			continue
		case ev.source:
			if typ != protowire.BytesType {
				return e, scratch, errors.New("debezium: source is not a message")
			}
			v, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return e, scratch, fmt.Errorf("debezium source: %w", protowire.ParseError(n))
			}
			b = b[n:]
			ts, has, err := sourceTS(v, ev)
			if err != nil {
				return e, scratch, err
			}
			if has {
				e.ts, e.hasTS = ts, true
			}
			continue
		}
		n = protowire.ConsumeFieldValue(num, typ, b)
		if n < 0 {
			return e, scratch, fmt.Errorf("debezium field %d: %w", num, protowire.ParseError(n))
		}
		b = b[n:]
	}
	if !e.hasTS && hasEventTS {
		e.ts, e.hasTS = eventTS, true
	}
	if e.hasTS && (e.ts > maxMillis || e.ts < -maxMillis) {
		return e, scratch, fmt.Errorf("debezium: %d is not a time in milliseconds", e.ts)
	}
	return e, scratch, nil
}

// sourceTS reads source's ts_ms.
func sourceTS(b []byte, ev *eventFields) (int64, bool, error) {
	var ts int64
	var has bool
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return 0, false, fmt.Errorf("debezium source: %w", protowire.ParseError(n))
		}
		b = b[n:]
		if num == ev.sourceTS {
			v, n, err := intField(b, typ, ev.sourceTSWrapped)
			if err != nil {
				return 0, false, fmt.Errorf("debezium source.ts_ms: %w", err)
			}
			b, ts, has = b[n:], v, true
			continue
		}
		n = protowire.ConsumeFieldValue(num, typ, b)
		if n < 0 {
			return 0, false, fmt.Errorf("debezium source field %d: %w", num, protowire.ParseError(n))
		}
		b = b[n:]
	}
	return ts, has, nil
}

// stringField reads a string, or a google.protobuf.StringValue when
// wrapped, and returns the bytes it took.
func stringField(b []byte, typ protowire.Type, wrapped bool) (string, int, error) {
	if typ != protowire.BytesType {
		return "", 0, errors.New("not a string")
	}
	v, n := protowire.ConsumeBytes(b)
	if n < 0 {
		return "", 0, protowire.ParseError(n)
	}
	if !wrapped {
		return string(v), n, nil
	}
	var s string
	for len(v) > 0 {
		num, t, m := protowire.ConsumeTag(v)
		if m < 0 {
			return "", 0, protowire.ParseError(m)
		}
		v = v[m:]
		if num == 1 && t == protowire.BytesType {
			x, m := protowire.ConsumeBytes(v)
			if m < 0 {
				return "", 0, protowire.ParseError(m)
			}
			s, v = string(x), v[m:]
			continue
		}
		if m = protowire.ConsumeFieldValue(num, t, v); m < 0 {
			return "", 0, protowire.ParseError(m)
		}
		v = v[m:]
	}
	return s, n, nil
}

// intField reads an integer (varint), or a google.protobuf.Int64Value
// when wrapped, and returns the bytes it took.
func intField(b []byte, typ protowire.Type, wrapped bool) (int64, int, error) {
	if !wrapped {
		if typ != protowire.VarintType {
			return 0, 0, errors.New("not an integer")
		}
		v, n := protowire.ConsumeVarint(b)
		if n < 0 {
			return 0, 0, protowire.ParseError(n)
		}
		return int64(v), n, nil
	}
	if typ != protowire.BytesType {
		return 0, 0, errors.New("not an Int64Value")
	}
	v, n := protowire.ConsumeBytes(b)
	if n < 0 {
		return 0, 0, protowire.ParseError(n)
	}
	var x int64
	for len(v) > 0 {
		num, t, m := protowire.ConsumeTag(v)
		if m < 0 {
			return 0, 0, protowire.ParseError(m)
		}
		v = v[m:]
		if num == 1 && t == protowire.VarintType {
			u, m := protowire.ConsumeVarint(v)
			if m < 0 {
				return 0, 0, protowire.ParseError(m)
			}
			x, v = int64(u), v[m:]
			continue
		}
		if m = protowire.ConsumeFieldValue(num, t, v); m < 0 {
			return 0, 0, protowire.ParseError(m)
		}
		v = v[m:]
	}
	return x, n, nil
}

// appendCDC appends to a row's bytes the _cdc field of event e, at field
// number num.
func appendCDC(dst []byte, num protowire.Number, e protoEvent) []byte {
	var cdc []byte
	cdc = protowire.AppendTag(cdc, 1, protowire.BytesType)
	cdc = protowire.AppendString(cdc, e.op)
	if e.hasTS {
		sec, ms := e.ts/1000, e.ts%1000
		if ms < 0 {
			sec, ms = sec-1, ms+1000
		}
		var ts []byte
		if sec != 0 {
			ts = protowire.AppendTag(ts, 1, protowire.VarintType)
			ts = protowire.AppendVarint(ts, uint64(sec))
		}
		if ms != 0 {
			ts = protowire.AppendTag(ts, 2, protowire.VarintType)
			ts = protowire.AppendVarint(ts, uint64(ms*1_000_000))
		}
		cdc = protowire.AppendTag(cdc, 2, protowire.BytesType)
		cdc = protowire.AppendBytes(cdc, ts)
	}
	dst = protowire.AppendTag(dst, num, protowire.BytesType)
	return protowire.AppendBytes(dst, cdc)
}
