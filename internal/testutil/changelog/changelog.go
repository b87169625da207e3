// Package changelog generates the changelog of a keyed table, as a Kafka
// topic of changes carries it, and folds it into the table it describes:
// the reference an upsert table is compared with in tests.
//
// A Gen yields inserts, updates and deletes of a bounded set of keys. A
// value is the row's JSON object; a delete is a tombstone (a nil value),
// or with the Debezium option a Debezium change event in JSON (op c, r,
// u, d with before, after and source.ts_ms). Every event carries the
// Kafka key: the JSON object of the key fields. Fold reads the events'
// bytes, not the generator's state, so it checks a generator's events as
// much as a sink's table.
package changelog

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strconv"
)

// Row is a row of the table: column name → value. Integers are int64,
// other numbers float64, strings string, booleans bool, nulls nil.
//
// The generator's rows have the key fields (id, a long, and with
// CompositeKey tenant, a string, first), then name (a string), version (a
// long: the event's number), score (a double, never integral), active (a
// boolean) and note (an optional string, null in about a quarter of
// rows).
type Row = map[string]any

// Kind is what an event does to its key's row.
type Kind uint8

const (
	// Insert writes the row of a key that has none.
	Insert Kind = iota + 1
	// Update replaces the row of a live key.
	Update
	// Delete removes the row of a key (a tombstone, or Debezium's d).
	Delete
	// Tombstone is the nil value Debezium writes after a d event (with
	// the Tombstones option); the key has no row already.
	Tombstone
)

// String is the kind's name.
func (k Kind) String() string {
	switch k {
	case Insert:
		return "insert"
	case Update:
		return "update"
	case Delete:
		return "delete"
	case Tombstone:
		return "tombstone"
	}
	return "Kind(" + strconv.Itoa(int(k)) + ")"
}

// Event is one record of the changelog.
type Event struct {
	// Kind is what the event does.
	Kind Kind
	// Key is the Kafka key: the JSON object of the key fields, in the
	// key fields' order (in JsonConverter's envelope with
	// ConnectSchemas).
	Key []byte
	// Value is the Kafka value: the row's JSON object, a Debezium event,
	// or nil (a tombstone).
	Value []byte
	// KeyFields are the key fields' values.
	KeyFields Row
	// Row is the key's row after the event; nil for a delete.
	Row Row
	// Op is the Debezium event's op ('c', 'r', 'u', 'd'); 0 without the
	// Debezium option and for a tombstone.
	Op byte
	// TSMillis is the event's source.ts_ms with the Debezium option.
	TSMillis int64
}

// Gen generates a changelog. It is not safe for concurrent use.
type Gen struct {
	rng       *rand.Rand
	keys      int
	composite bool
	debezium  bool
	tombs     bool
	snapshot  int
	noBefore  bool
	connect   bool
	weights   [3]int // insert (of a key without a row), update, delete
	n         int64
	live      map[int]Row // the generator's own state, to choose changes
	liveIDs   []int       // live's keys, to pick one at random
	pos       map[int]int // a live id's index in liveIDs
	pending   *Event      // a tombstone to yield after a d event
	fold      map[string]Row
	tenants   []string
}

// Option configures a Gen.
type Option func(*Gen)

// Debezium makes values Debezium change events in JSON: an insert is op
// c (or r within the snapshot, see Snapshot), an update op u, a delete op
// d with before; every event has after (null for d), before (null for c
// and r), op, ts_ms and source.ts_ms. Without it values are the rows and
// deletes are tombstones.
func Debezium() Option { return func(g *Gen) { g.debezium = true } }

// Tombstones makes each Debezium d event followed by a tombstone of its
// key, as Debezium writes by default (tombstones.on.delete). Only with
// Debezium.
func Tombstones() Option { return func(g *Gen) { g.tombs = true } }

// Snapshot makes the first n inserts Debezium op r (a snapshot's rows).
// Only with Debezium.
func Snapshot(n int) Option { return func(g *Gen) { g.snapshot = n } }

// NoBefore makes Debezium events carry no before (null), as a table
// without a replica identity gives them: a d event's key is then its Kafka
// key's. Only with Debezium.
func NoBefore() Option { return func(g *Gen) { g.noBefore = true } }

// ConnectSchemas wraps each Debezium event and each Kafka key in Kafka
// Connect's JsonConverter envelope of schemas.enable: {"schema": {...},
// "payload": ...}. Only with Debezium.
func ConnectSchemas() Option { return func(g *Gen) { g.connect = true } }

// CompositeKey makes the key two fields, tenant (a string) and id (an
// integer), instead of id alone.
func CompositeKey() Option { return func(g *Gen) { g.composite = true } }

// Mix sets the relative weights of the changes of a key chosen at random:
// each event is an insert (of a key without a row), an update or a delete
// (of a live key) by these weights; an insert when no key is live, an
// update for an insert when every key is (so Mix(1, 0, 0) never deletes). A negative weight is 0, an insert
// weight of 0 is 1. Defaults to 1, 3, 1.
func Mix(insert, update, del int) Option {
	return func(g *Gen) { g.weights = [3]int{insert, update, del} }
}

// New returns a generator of keys distinct keys (ids 0 to keys-1),
// deterministic by seed.
func New(seed uint64, keys int, opts ...Option) *Gen {
	g := &Gen{rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), keys: max(keys, 1),
		weights: [3]int{1, 3, 1}, live: map[int]Row{}, pos: map[int]int{}, fold: map[string]Row{},
		tenants: []string{"acme", "globex", "initech", "umbrella"}}
	for _, o := range opts {
		o(g)
	}
	for i, w := range g.weights {
		g.weights[i] = max(w, 0)
	}
	if g.weights[0] == 0 {
		g.weights[0] = 1 // an empty table has only inserts to make
	}
	return g
}

// KeyFields are the key fields' names, in order.
func (g *Gen) KeyFields() []string {
	if g.composite {
		return []string{"tenant", "id"}
	}
	return []string{"id"}
}

// Next returns the next event.
func (g *Gen) Next() Event {
	if g.pending != nil {
		ev := *g.pending
		g.pending = nil
		g.apply(ev)
		return ev
	}
	g.n++
	ts := 1_700_000_000_000 + g.n*1000
	id, kind := g.choose()
	keyRow := g.keyRow(id)
	ev := Event{Kind: kind, Key: rowJSON(keyRow, g.KeyFields()), KeyFields: keyRow}
	before := g.live[id]
	if kind != Delete {
		row := Row{}
		for k, v := range keyRow {
			row[k] = v
		}
		row["name"] = fmt.Sprintf("row-%d-%d", id, g.n)
		row["version"] = g.n
		row["score"] = float64(g.rng.IntN(100000))/8 + 1.0/16 // never integral: JSON keeps it a float
		row["active"] = g.rng.IntN(2) == 0
		if g.rng.IntN(4) == 0 {
			row["note"] = nil
		} else {
			row["note"] = "note " + strconv.Itoa(g.rng.IntN(1000))
		}
		ev.Row = row
		g.setLive(id, row)
	} else {
		g.setLive(id, nil)
	}
	if !g.debezium {
		if ev.Row != nil {
			ev.Value = rowJSON(ev.Row, columns(g.KeyFields()))
		}
		g.apply(ev)
		return ev
	}
	switch kind {
	case Insert:
		ev.Op = 'c'
		if g.snapshot > 0 {
			g.snapshot--
			ev.Op = 'r'
		}
	case Update:
		ev.Op = 'u'
	case Delete:
		ev.Op = 'd'
	}
	ev.TSMillis = ts
	if g.noBefore {
		before = nil
	}
	ev.Value = debeziumJSON(ev.Op, before, ev.Row, ts, columns(g.KeyFields()))
	if g.connect {
		ev.Key = connectJSON(ev.Key, `{"type":"struct","optional":false,"name":"shop.items.Key","fields":[]}`)
		ev.Value = connectJSON(ev.Value, `{"type":"struct","optional":false,"name":"shop.items.Envelope","fields":[]}`)
	}
	if kind == Delete && g.tombs {
		g.pending = &Event{Kind: Tombstone, Key: ev.Key, KeyFields: keyRow}
	}
	g.apply(ev)
	return ev
}

// choose picks the next change by the weights: an update or a delete of
// a live key, or an insert of a key without a row (an update when every
// key is live, an insert when none is).
func (g *Gen) choose() (int, Kind) {
	w := g.weights
	r := g.rng.IntN(w[0] + w[1] + w[2])
	kind := Insert
	switch {
	case r >= w[0]+w[1]:
		kind = Delete
	case r >= w[0]:
		kind = Update
	}
	if len(g.liveIDs) == 0 {
		kind = Insert
	} else if kind == Insert && len(g.liveIDs) == g.keys {
		kind = Update
	}
	if kind != Insert {
		return g.liveIDs[g.rng.IntN(len(g.liveIDs))], kind
	}
	for range 64 {
		if id := g.rng.IntN(g.keys); g.live[id] == nil {
			return id, Insert
		}
	}
	start := g.rng.IntN(g.keys)
	for i := range g.keys {
		if id := (start + i) % g.keys; g.live[id] == nil {
			return id, Insert
		}
	}
	panic("changelog: no key without a row")
}

// setLive records the row of key id; nil removes it.
func (g *Gen) setLive(id int, row Row) {
	if row != nil {
		if _, ok := g.live[id]; !ok {
			g.pos[id] = len(g.liveIDs)
			g.liveIDs = append(g.liveIDs, id)
		}
		g.live[id] = row
		return
	}
	if i, ok := g.pos[id]; ok {
		last := g.liveIDs[len(g.liveIDs)-1]
		g.liveIDs[i] = last
		g.pos[last] = i
		g.liveIDs = g.liveIDs[:len(g.liveIDs)-1]
		delete(g.pos, id)
		delete(g.live, id)
	}
}

func (g *Gen) keyRow(id int) Row {
	if g.composite {
		return Row{"tenant": g.tenants[id%len(g.tenants)], "id": int64(id)}
	}
	return Row{"id": int64(id)}
}

// columns are the rows' columns in the order their JSON has them.
func columns(keyFields []string) []string {
	return append(append([]string(nil), keyFields...), "name", "version", "score", "active", "note")
}

// connectJSON wraps payload in JsonConverter's envelope with schema.
func connectJSON(payload []byte, schema string) []byte {
	b := append([]byte(`{"schema":`), schema...)
	b = append(b, `,"payload":`...)
	b = append(b, payload...)
	return append(b, '}')
}

// apply folds ev into the generator's fold; an event the fold cannot read
// is the generator's bug.
func (g *Gen) apply(ev Event) {
	if err := Apply(g.fold, g.KeyFields(), ev.Key, ev.Value); err != nil {
		panic(fmt.Sprintf("changelog: the generator's own event: %v", err))
	}
}

// Fold returns the table the events so far describe: each live key's row,
// by the key's JSON object (KeyString; Event.Key without ConnectSchemas).
// The map is the caller's.
func (g *Gen) Fold() map[string]Row {
	out := make(map[string]Row, len(g.fold))
	for k, r := range g.fold {
		c := make(Row, len(r))
		for n, v := range r {
			c[n] = v
		}
		out[k] = c
	}
	return out
}

// Fold folds a changelog into its table: for each record (Kafka key and
// value, in order) Apply. keyFields are the key fields in order.
func Fold(keyFields []string, records ...[2][]byte) (map[string]Row, error) {
	t := map[string]Row{}
	for i, r := range records {
		if err := Apply(t, keyFields, r[0], r[1]); err != nil {
			return nil, fmt.Errorf("record %d: %w", i, err)
		}
	}
	return t, nil
}

// Apply folds one record into table t (live key → row, the key as
// KeyString gives it). A value or Kafka key in Kafka Connect's
// JsonConverter envelope ({"schema": ..., "payload": {...}}) is its
// payload. A value that is a Debezium event (an object with op) applies its op (c, r and u write after, d deletes the key of
// before, else of the Kafka key); another value is the key's row, its key
// read from it; a nil value (a tombstone) deletes the key of the Kafka
// key. A truncate, an unknown op, or a record whose key cannot be read is
// an error, and t is left as it was.
func Apply(t map[string]Row, keyFields []string, key, value []byte) error {
	if value == nil {
		k, err := kafkaKey(keyFields, key)
		if err != nil {
			return fmt.Errorf("tombstone: %w", err)
		}
		delete(t, k)
		return nil
	}
	obj, err := decode(value)
	if err != nil {
		return err
	}
	obj = unwrapConnect(obj)
	opv, isEvent := obj["op"]
	if !isEvent {
		k, err := KeyString(keyFields, obj)
		if err != nil {
			return err
		}
		t[k] = obj
		return nil
	}
	op, _ := opv.(string)
	switch op {
	case "c", "r", "u":
		after, ok := obj["after"].(map[string]any)
		if !ok {
			return fmt.Errorf("debezium op %s without after", op)
		}
		k, err := KeyString(keyFields, after)
		if err != nil {
			return fmt.Errorf("debezium after: %w", err)
		}
		t[k] = after
	case "d":
		var k string
		if before, ok := obj["before"].(map[string]any); ok {
			k, err = KeyString(keyFields, before)
		} else {
			k, err = kafkaKey(keyFields, key)
		}
		if err != nil {
			return fmt.Errorf("debezium delete: %w", err)
		}
		delete(t, k)
	default:
		return fmt.Errorf("debezium op %q: not c, r, u or d", op)
	}
	return nil
}

func kafkaKey(keyFields []string, key []byte) (string, error) {
	if len(key) == 0 {
		return "", fmt.Errorf("no Kafka key")
	}
	obj, err := decode(key)
	if err != nil {
		return "", fmt.Errorf("Kafka key: %w", err)
	}
	return KeyString(keyFields, unwrapConnect(obj))
}

// unwrapConnect returns the payload of JsonConverter's envelope (an
// object of exactly schema and an object payload), else obj.
func unwrapConnect(obj Row) Row {
	if p, ok := obj["payload"].(map[string]any); ok && len(obj) == 2 {
		if _, ok := obj["schema"]; ok {
			return p
		}
	}
	return obj
}

// KeyString is the key of row r: the JSON object of its key fields, in
// order, as Event.Key is. A key field missing, null or not a scalar is an
// error.
func KeyString(keyFields []string, r Row) (string, error) {
	for _, f := range keyFields {
		switch r[f].(type) {
		case int64, float64, string, bool:
		case nil:
			return "", fmt.Errorf("key field %s is missing or null", f)
		default:
			return "", fmt.Errorf("key field %s is not a scalar", f)
		}
	}
	return string(rowJSON(r, keyFields)), nil
}

// decode reads a JSON object, numbers as int64 when integral.
func decode(b []byte) (Row, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, fmt.Errorf("not JSON: %w", err)
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("not a JSON object")
	}
	return numbers(obj).(map[string]any), nil
}

func numbers(v any) any {
	switch x := v.(type) {
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return i
		}
		f, _ := x.Float64()
		return f
	case map[string]any:
		for k, e := range x {
			x[k] = numbers(e)
		}
	case []any:
		for i, e := range x {
			x[i] = numbers(e)
		}
	}
	return v
}

// rowJSON is the JSON object of r's columns cols, in that order.
func rowJSON(r Row, cols []string) []byte {
	b := []byte{'{'}
	for i, c := range cols {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendQuote(b, c)
		b = append(b, ':')
		v, err := json.Marshal(r[c])
		if err != nil {
			panic(err)
		}
		b = append(b, v...)
	}
	return append(b, '}')
}

func debeziumJSON(op byte, before, after Row, ts int64, cols []string) []byte {
	b := []byte(`{"before":`)
	if before == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, rowJSON(before, cols)...)
	}
	b = append(b, `,"after":`...)
	if after == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, rowJSON(after, cols)...)
	}
	b = append(b, `,"source":{"connector":"postgresql","db":"shop","table":"items","ts_ms":`...)
	b = strconv.AppendInt(b, ts, 10)
	b = append(b, `},"op":"`...)
	b = append(b, op)
	b = append(b, `","ts_ms":`...)
	b = strconv.AppendInt(b, ts+7, 10)
	return append(b, '}')
}
