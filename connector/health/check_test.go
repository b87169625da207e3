package health

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/pqsink/pqsink/objstore"
)

func TestCheckTopics(t *testing.T) {
	for _, c := range []struct {
		name  string
		found map[string]error
		want  string // "" no error
	}{
		{"all there", map[string]error{"a": nil, "b": nil}, ""},
		{"dead-letter topic missing", map[string]error{"a": nil, "b": nil, "dlq": kafka.UnknownTopicOrPartition}, ""},
		{"configured missing", map[string]error{"a": nil, "b": kafka.UnknownTopicOrPartition}, `kafka.topics: topic "b" does not exist on the brokers`},
		{"configured absent", map[string]error{"a": nil}, `kafka.topics: topic "b" does not exist`},
		{"refused", map[string]error{"a": kafka.TopicAuthorizationFailed, "b": nil}, `kafka.topics: topic "a": `},
		{"dead-letter topic refused", map[string]error{"a": nil, "b": nil, "dlq": kafka.TopicAuthorizationFailed}, `dead_letter.topic: topic "dlq": `},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := CheckTopics(c.found, []string{"a", "b", "dlq"}, []string{"a", "b"}, "dlq")
			switch {
			case c.want == "" && err != nil:
				t.Errorf("error %v", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Errorf("got %v, want %q", err, c.want)
			}
		})
	}
}

func TestCheckDestinationFolder(t *testing.T) {
	ctx := context.Background()
	noOpen := func(context.Context) (objstore.Store, error) { return nil, errors.New("a folder is not opened") }
	dir := t.TempDir()
	if note, err := CheckDestination(ctx, "file://"+dir, time.Minute, noOpen); err != nil || note != "" {
		t.Errorf("an existing folder: %q, %v", note, err)
	}
	missing := filepath.Join(dir, "out")
	if note, err := CheckDestination(ctx, "file://"+missing, time.Minute, noOpen); err != nil || !strings.Contains(note, "does not exist yet") {
		t.Errorf("a missing folder: %q, %v", note, err)
	}
	if _, err := os.Stat(missing); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the check created the folder: %v", err)
	}
	file := filepath.Join(dir, "f")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := CheckDestination(ctx, "file://"+file, time.Minute, noOpen); err == nil || !strings.Contains(err.Error(), "is not a folder") {
		t.Errorf("a file: %v", err)
	}
	if _, err := CheckDestination(ctx, "s3://bucket/x", time.Minute, noOpen); err == nil || !strings.Contains(err.Error(), "not opened") {
		t.Errorf("a bucket that cannot be opened: %v", err)
	}
}
