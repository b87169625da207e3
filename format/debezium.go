package format

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/pqsink/pqsink/internal/jsonscan"
)

// SyntaxError is a value that is not JSON.
type SyntaxError = jsonscan.SyntaxError

// DebeziumEvent is a Debezium change event read from its JSON.
type DebeziumEvent struct {
	// Op is the operation: 'c' (create), 'r' (read, a snapshot's row),
	// 'u' (update) or 'd' (delete).
	Op byte
	// Before and After are the row before and after the change, JSON
	// objects' text within the event; nil when null or absent. After is
	// set for c, r and u.
	Before, After []byte
	// TSMillis is the time of the change at its source (source.ts_ms,
	// else the event's ts_ms), in milliseconds since the epoch, when
	// HasTS.
	TSMillis int64
	HasTS    bool
}

// ErrTruncate is a Debezium truncate event (op t): an upsert table does
// not empty itself on one, since a truncate's rows are not in the topic.
var ErrTruncate = errors.New("debezium: a truncate event (op t): the table is not truncated; delete its rows by key, or filter truncate events out (Debezium's skipped.operations: t)")

// maxTSMillis bounds a change's time so that it holds in nanoseconds.
const maxTSMillis = 1<<63/1_000_000 - 1

// ParseDebezium reads a Debezium change event from its JSON value, with
// or without the {"schema": ..., "payload": ...} wrapper of Kafka
// Connect's JsonConverter with schemas.enable. A value that is not JSON is
// a *SyntaxError; an event without an op, of an op other than c, r, u,
// d and t, a c, r or u without after, or a before, after or timestamp of
// the wrong type is an error that says so; a truncate is ErrTruncate.
func ParseDebezium(value []byte) (DebeziumEvent, error) {
	var s jsonscan.Scanner
	ev, payload, err := parseEvent(&s, value, true)
	if err != nil {
		return DebeziumEvent{}, err
	}
	if payload != nil {
		if ev, _, err = parseEvent(&s, payload, false); err != nil {
			return DebeziumEvent{}, fmt.Errorf("debezium payload: %w", err)
		}
	}
	return ev, nil
}

// parseEvent reads an event's members. When outer, an event without op
// but with an object member payload returns that payload, to be read as
// the event.
func parseEvent(s *jsonscan.Scanner, value []byte, outer bool) (DebeziumEvent, []byte, error) {
	var ev DebeziumEvent
	var op, payload []byte
	var seen [4]bool // op, before, after, ts_ms
	var eventTS, sourceTS int64
	var hasEventTS, hasSourceTS bool
	s.Reset(value)
	t, err := s.Next()
	if err != nil {
		return ev, nil, err
	}
	if t != jsonscan.BeginObject {
		if err := skipAll(s); err != nil {
			return ev, nil, err
		}
		return ev, nil, errors.New("debezium: the event is not a JSON object")
	}
	for {
		t, err := s.Next()
		if err != nil {
			return ev, nil, err
		}
		if t == jsonscan.EndObject {
			break
		}
		name := string(s.Bytes())
		if t, err = s.Next(); err != nil {
			return ev, nil, err
		}
		if slot := memberSlot(name); slot >= 0 {
			if seen[slot] {
				return ev, nil, fmt.Errorf("debezium: member %s twice", name)
			}
			seen[slot] = true
		}
		switch name {
		case "op":
			if t != jsonscan.String {
				return ev, nil, fmt.Errorf("debezium: op is %s, not a string", kindName(t))
			}
			op = append([]byte(nil), s.Bytes()...)
		case "before", "after":
			var obj []byte
			switch t {
			case jsonscan.Null:
			case jsonscan.BeginObject:
				begin := s.Offset()
				if err := s.Skip(); err != nil {
					return ev, nil, err
				}
				obj = value[begin : s.Offset()+1]
			default:
				if err := skipValue(s, t); err != nil {
					return ev, nil, err
				}
				return ev, nil, fmt.Errorf("debezium: %s is %s, not an object or null", name, kindName(t))
			}
			if name == "before" {
				ev.Before = obj
			} else {
				ev.After = obj
			}
		case "ts_ms":
			if hasEventTS, eventTS, err = readMillis(s, t, "ts_ms"); err != nil {
				return ev, nil, err
			}
		case "source":
			if t == jsonscan.BeginObject {
				if hasSourceTS, sourceTS, err = readSource(s); err != nil {
					return ev, nil, err
				}
			} else if err := skipValue(s, t); err != nil {
				return ev, nil, err
			}
		case "payload":
			if outer && t == jsonscan.BeginObject {
				begin := s.Offset()
				if err := s.Skip(); err != nil {
					return ev, nil, err
				}
				payload = value[begin : s.Offset()+1]
			} else if err := skipValue(s, t); err != nil {
				return ev, nil, err
			}
		default:
			if err := skipValue(s, t); err != nil {
				return ev, nil, err
			}
		}
	}
	if err := skipAll(s); err != nil {
		return ev, nil, err
	}
	if op == nil {
		if payload != nil {
			return ev, payload, nil
		}
		return ev, nil, errors.New("debezium: the event has no op (is the topic's value a Debezium envelope?)")
	}
	if len(op) != 1 {
		return ev, nil, fmt.Errorf("debezium: unknown op %q, want c, r, u, d or t", op)
	}
	switch ev.Op = op[0]; ev.Op {
	case 'c', 'r', 'u':
		if ev.After == nil {
			return ev, nil, fmt.Errorf("debezium: an op %c event without after", ev.Op)
		}
	case 'd':
	case 't':
		return ev, nil, ErrTruncate
	default:
		return ev, nil, fmt.Errorf("debezium: unknown op %q, want c, r, u, d or t", op)
	}
	switch {
	case hasSourceTS:
		ev.TSMillis, ev.HasTS = sourceTS, true
	case hasEventTS:
		ev.TSMillis, ev.HasTS = eventTS, true
	}
	return ev, nil, nil
}

// memberSlot is the index in seen of a member that may appear once; -1
// for the others.
func memberSlot(name string) int {
	switch name {
	case "op":
		return 0
	case "before":
		return 1
	case "after":
		return 2
	case "ts_ms":
		return 3
	}
	return -1
}

// readSource reads the source object just opened, for its ts_ms.
func readSource(s *jsonscan.Scanner) (bool, int64, error) {
	var has bool
	var ts int64
	for {
		t, err := s.Next()
		if err != nil {
			return false, 0, err
		}
		if t == jsonscan.EndObject {
			return has, ts, nil
		}
		name := string(s.Bytes())
		if t, err = s.Next(); err != nil {
			return false, 0, err
		}
		if name != "ts_ms" {
			if err := skipValue(s, t); err != nil {
				return false, 0, err
			}
			continue
		}
		if has {
			return false, 0, errors.New("debezium: member source.ts_ms twice")
		}
		if has, ts, err = readMillis(s, t, "source.ts_ms"); err != nil {
			return false, 0, err
		}
	}
}

// readMillis reads a time in milliseconds, or null.
func readMillis(s *jsonscan.Scanner, t jsonscan.Kind, name string) (bool, int64, error) {
	switch t {
	case jsonscan.Null:
		return false, 0, nil
	case jsonscan.Number:
		v, err := strconv.ParseInt(string(s.Bytes()), 10, 64)
		if err != nil || v > maxTSMillis || v < -maxTSMillis {
			return false, 0, fmt.Errorf("debezium: %s %s is not a time in milliseconds", name, s.Bytes())
		}
		return true, v, nil
	}
	if err := skipValue(s, t); err != nil {
		return false, 0, err
	}
	return false, 0, fmt.Errorf("debezium: %s is %s, not a number", name, kindName(t))
}

// skipValue skips the value whose first token t was just read.
func skipValue(s *jsonscan.Scanner, t jsonscan.Kind) error {
	if t == jsonscan.BeginObject || t == jsonscan.BeginArray {
		return s.Skip()
	}
	return nil
}

// skipAll reads the value to its end, so that bad JSON after what was
// read is a syntax error.
func skipAll(s *jsonscan.Scanner) error {
	for {
		if _, err := s.Next(); err != nil {
			var syntax *jsonscan.SyntaxError
			if errors.As(err, &syntax) {
				return err
			}
			return nil // io.EOF
		}
	}
}

func kindName(t jsonscan.Kind) string {
	switch t {
	case jsonscan.String:
		return "a string"
	case jsonscan.Number:
		return "a number"
	case jsonscan.True, jsonscan.False:
		return "a boolean"
	case jsonscan.Null:
		return "null"
	case jsonscan.BeginArray:
		return "an array"
	case jsonscan.BeginObject:
		return "an object"
	}
	return t.String()
}
