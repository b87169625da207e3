package connector

import (
	"strings"

	"github.com/pqsink/pqsink/connector/pathfields"
)

// pathFieldSpec is the {field} parts of the sink's path template and its
// time_field, for a sink without a table; nil when it has neither.
func (s *Sink) pathFieldSpec() *pathfields.Spec {
	paths := s.tmpl.Fields()
	if s.cfg.TimeField != "" {
		paths = append(paths[:len(paths):len(paths)], strings.Split(s.cfg.TimeField, "."))
	}
	if len(paths) == 0 {
		return nil
	}
	return &pathfields.Spec{Paths: paths, Fields: len(s.tmpl.Fields()), TimeField: s.cfg.TimeField}
}
