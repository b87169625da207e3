package rowgroup

import (
	"fmt"
	"strings"

	"github.com/pqsink/pqsink/schema"
	"github.com/pqsink/pqsink/variant"
)

// ParseVariantShape reads a shredding shape written down by a user, in
// either of two forms: a Parquet message with one VARIANT field, whose
// typed_value columns describe the shape, or lines of "PATH TYPE" (see
// variant.ParseShapePaths). The form is told by the first line that is
// neither blank nor a comment: a path list starts with "$".
func ParseVariantShape(text string) (variant.Shape, error) {
	if isPathList(text) {
		return variant.ParseShapePaths(text)
	}
	s, err := schema.Parse(text)
	if err != nil {
		return variant.Shape{}, err
	}
	if len(s.Fields()) != 1 {
		return variant.Shape{}, fmt.Errorf("the message must have one VARIANT field, has %d fields", len(s.Fields()))
	}
	return VariantShape(s.Fields()[0])
}

func isPathList(text string) bool {
	for line := range strings.Lines(text) {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "//") || strings.HasPrefix(line, "#") {
			continue
		}
		return strings.HasPrefix(line, "$")
	}
	return false
}
