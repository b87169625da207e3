package config

import (
	"errors"
	"fmt"
	"strings"

	"github.com/pqsink/pqsink/bloom"
	"github.com/pqsink/pqsink/compress"
)

// checkCodec checks "name[:level]" with compress.Parse, the grammar
// convert's --codec reads too, and returns it in lower case.
func checkCodec(s string) (string, error) {
	_, _, err := compress.Parse(s)
	var pe *compress.ParseError
	switch {
	case err == nil:
		return strings.ToLower(strings.TrimSpace(s)), nil
	case !errors.As(err, &pe):
		return "", err
	case !pe.Known:
		hint := ""
		if pe.Hint != "" {
			hint = " (" + pe.Hint + ")"
		}
		return "", fmt.Errorf("%s is not one of %s%s", quote(pe.Name), strings.Join(compress.Names(), ", "), hint)
	case pe.MaxLevel == 0:
		return "", fmt.Errorf("%s takes no level", pe.Name)
	}
	return "", fmt.Errorf("%s level %s is not a number from %d to %d", pe.Name, quote(pe.Level), pe.MinLevel, pe.MaxLevel)
}

// checkBloom checks "column[:fpp]" with bloom.ParseSetting and returns
// the column.
func checkBloom(b string) (string, error) {
	col, _, err := bloom.ParseSetting(b)
	return col, err
}
