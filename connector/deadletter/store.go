package deadletter

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"
	"unicode/utf8"

	"github.com/pqsink/pqsink/archive"
	"github.com/pqsink/pqsink/objstore"
	"github.com/pqsink/pqsink/rowgroup"
)

// storeLetters writes dead letters as JSON Lines objects under a prefix,
// with the rules of the Parquet files: an object's key is a function of
// the partition and the offset of its first letter, and it is created only
// if absent. When it exists, an earlier owner of the partition wrote the
// letters from that offset on: its last line says how far, and only the
// letters after it are written, to the key of the first of them.
type storeLetters struct {
	store       objstore.Store
	conditional bool // the store refuses to overwrite; else look first
}

// letterLine is one line of a dead-letter object.
type letterLine struct {
	Topic     string       `json:"topic"`
	Partition int32        `json:"partition"`
	Offset    int64        `json:"offset"`
	Timestamp time.Time    `json:"timestamp"`
	Key       []byte       `json:"key"` // base64; null for a null key
	Value     []byte       `json:"value"`
	Headers   []headerLine `json:"headers"`
	Reason    string       `json:"reason"`
	Error     string       `json:"error"`
}

// headerLine is one header of a dead letter. JSON text cannot hold a key
// that is not UTF-8 (encoding/json would replace its bad bytes), so such a
// key is also given whole, in base64, as key_bytes.
type headerLine struct {
	Key      string `json:"key"`
	KeyBytes []byte `json:"key_bytes,omitempty"`
	Value    []byte `json:"value"`
}

func newHeaderLine(h rowgroup.Header) headerLine {
	l := headerLine{Key: h.Key, Value: h.Value}
	if !utf8.ValidString(h.Key) {
		l.KeyBytes = []byte(h.Key)
	}
	return l
}

// letterKey is the object of the dead letters of topic[partition] from offset first.
func letterKey(topic string, partition int32, first int64) string {
	t := archive.Escape(topic)
	return fmt.Sprintf("%s/%d/%s+%d+%020d.jsonl", t, partition, t, partition, first)
}

func (d *storeLetters) Send(ctx context.Context, topic string, partition int32, letters []Letter) (int64, error) {
	var body bytes.Buffer
	for len(letters) > 0 {
		key := letterKey(topic, partition, letters[0].Offset)
		body.Reset()
		enc := json.NewEncoder(&body)
		enc.SetEscapeHTML(false)
		for i := range letters {
			l := &letters[i]
			line := letterLine{Topic: topic, Partition: partition, Offset: l.Offset, Timestamp: l.Time.UTC(),
				Key: l.Key, Value: l.Value, Reason: l.Reason, Error: l.Error, Headers: []headerLine{}}
			if line.Value == nil {
				line.Value = []byte{}
			}
			for _, h := range l.Headers {
				line.Headers = append(line.Headers, newHeaderLine(h))
			}
			if err := enc.Encode(&line); err != nil {
				return 0, fmt.Errorf("dead letter %s: %w", key, err)
			}
		}
		err := objstore.ErrExists
		if !d.conditional {
			if _, err = d.store.Head(ctx, key); errors.Is(err, objstore.ErrNotExist) {
				err = nil
			} else if err == nil {
				err = objstore.ErrExists
			}
		}
		if d.conditional || err == nil {
			_, err = objstore.Put(ctx, d.store, key, bytes.NewReader(body.Bytes()), objstore.ContentType("application/x-ndjson"))
		}
		if err == nil {
			return letters[len(letters)-1].Offset, nil
		}
		if !errors.Is(err, objstore.ErrExists) {
			return 0, fmt.Errorf("dead letters %s: %w", key, err)
		}
		last, err := d.lastOffset(ctx, key, topic, partition, letters[0].Offset)
		if err != nil {
			return 0, err
		}
		i := 0
		for i < len(letters) && letters[i].Offset <= last {
			i++
		}
		if letters = letters[i:]; len(letters) == 0 {
			return last, nil
		}
	}
	return 0, nil // not reached: send is called with letters
}

// lastOffset reads the offset of the last letter in the existing object
// key, checking that it holds topic[partition] from offset first.
func (d *storeLetters) lastOffset(ctx context.Context, key, topic string, partition int32, first int64) (int64, error) {
	r, _, err := d.store.Get(ctx, key)
	if err != nil {
		return 0, fmt.Errorf("adopting dead letters %s: %w", key, err)
	}
	defer r.Close()
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<30)
	last, n := int64(-1), 0
	for sc.Scan() {
		var l struct {
			Topic     string `json:"topic"`
			Partition int32  `json:"partition"`
			Offset    int64  `json:"offset"`
		}
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			return 0, fmt.Errorf("adopting dead letters %s: line %d: %w", key, n+1, err)
		}
		if l.Topic != topic || l.Partition != partition || (n == 0 && l.Offset != first) || l.Offset <= last {
			return 0, fmt.Errorf("adopting dead letters %s: line %d holds %s[%d] offset %d, not the letters of this partition from offset %d: is another sink writing to the same prefix?",
				key, n+1, l.Topic, l.Partition, l.Offset, first)
		}
		last = l.Offset
		n++
	}
	if err := sc.Err(); err != nil && !errors.Is(err, io.EOF) {
		return 0, fmt.Errorf("adopting dead letters %s: %w", key, err)
	}
	if n == 0 {
		return 0, fmt.Errorf("adopting dead letters %s: the object is empty", key)
	}
	return last, nil
}

func (d *storeLetters) Close() error { return d.store.Close() }
