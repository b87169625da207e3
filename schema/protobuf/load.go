// Package protobuf maps Protobuf messages to Parquet schemas: message
// descriptors compiled from .proto text (imports from import paths, the
// well-known types built in) or read from a Schema Registry's PROTOBUF
// schemas with their references; the Parquet schema of a message, with
// field numbers as field ids; and the Confluent wire format of Protobuf
// values (magic byte, schema id, message indexes). The decoder that reads
// messages into column buffers is rowgroup/protorow.
package protobuf

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/bufbuild/protocompile"
	"github.com/bufbuild/protocompile/reporter"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// LoadFile compiles the .proto file at path, its imports found in
// importPaths (and the directory of path), the well-known types
// (google/protobuf/*.proto) built in, and returns the message called
// name: its full name (shop.v1.Event), or its name alone when only one
// message of the file has it.
func LoadFile(ctx context.Context, path string, importPaths []string, name string) (protoreflect.MessageDescriptor, error) {
	rel, paths, err := importName(path, importPaths)
	if err != nil {
		return nil, err
	}
	c := protocompile.Compiler{
		Resolver: protocompile.WithStandardImports(&protocompile.SourceResolver{
			ImportPaths: paths,
			Accessor: func(p string) (io.ReadCloser, error) {
				return os.Open(p)
			},
		}),
		Reporter: reporter.NewReporter(nil, nil),
	}
	files, err := c.Compile(ctx, rel)
	if err != nil {
		return nil, fmt.Errorf("protobuf: compiling %s: %w", path, err)
	}
	return FindMessage(files[0], name)
}

// importName returns the name by which path is imported (its path below
// the first import path that holds it, or its base name with its own
// directory added to the import paths) and the import paths to search.
func importName(path string, importPaths []string) (string, []string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", nil, fmt.Errorf("protobuf: %s: %w", path, err)
	}
	if _, err := os.Stat(abs); err != nil {
		return "", nil, fmt.Errorf("protobuf: %w", err)
	}
	paths := make([]string, 0, len(importPaths)+1)
	for _, p := range importPaths {
		ap, err := filepath.Abs(p)
		if err != nil {
			return "", nil, fmt.Errorf("protobuf: import path %s: %w", p, err)
		}
		paths = append(paths, ap)
	}
	for _, p := range paths {
		if r, err := filepath.Rel(p, abs); err == nil && !strings.HasPrefix(r, "..") {
			return filepath.ToSlash(r), paths, nil
		}
	}
	return filepath.Base(abs), append(paths, filepath.Dir(abs)), nil
}

// FindMessage returns the message of fd called name: a full name, or a
// name without its package, or a nested message's path below the file's
// package (Outer.Inner). An empty name is the file's first message.
func FindMessage(fd protoreflect.FileDescriptor, name string) (protoreflect.MessageDescriptor, error) {
	if name == "" {
		if fd.Messages().Len() == 0 {
			return nil, fmt.Errorf("protobuf: %s has no message", fd.Path())
		}
		return fd.Messages().Get(0), nil
	}
	full := protoreflect.FullName(name)
	if pkg := fd.Package(); pkg != "" && !strings.HasPrefix(name, string(pkg)+".") {
		full = pkg.Append(protoreflect.Name(name))
		if strings.Contains(name, ".") {
			full = protoreflect.FullName(string(pkg) + "." + name)
		}
	}
	var found protoreflect.MessageDescriptor
	var walk func(ms protoreflect.MessageDescriptors)
	walk = func(ms protoreflect.MessageDescriptors) {
		for i := 0; i < ms.Len() && found == nil; i++ {
			m := ms.Get(i)
			if m.FullName() == full || m.FullName() == protoreflect.FullName(name) {
				found = m
				return
			}
			walk(m.Messages())
		}
	}
	walk(fd.Messages())
	if found == nil {
		return nil, fmt.Errorf("protobuf: %s has no message %s", fd.Path(), name)
	}
	if found.IsMapEntry() {
		return nil, fmt.Errorf("protobuf: %s is a map entry, not a message", name)
	}
	return found, nil
}

// MessageAt returns the message of fd that a Confluent message index
// array names: the indexes of a top-level message, then of a nested one
// in it, and so on. An empty array is the first message.
func MessageAt(fd protoreflect.FileDescriptor, indexes []int) (protoreflect.MessageDescriptor, error) {
	if len(indexes) == 0 {
		indexes = []int{0}
	}
	ms := fd.Messages()
	var m protoreflect.MessageDescriptor
	for depth, i := range indexes {
		if i < 0 || i >= ms.Len() {
			return nil, fmt.Errorf("protobuf: %w: message index %d at depth %d, %s has %d there", ErrWireFormat, i, depth, fd.Path(), ms.Len())
		}
		m = ms.Get(i)
		ms = m.Messages()
	}
	if m.IsMapEntry() {
		return nil, fmt.Errorf("protobuf: %w: message indexes %v name a map entry", ErrWireFormat, indexes)
	}
	return m, nil
}

// errRecursive is wrapped by the mapping's error for a message that
// contains itself.
var errRecursive = errors.New("recursive message")
