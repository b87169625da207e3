package bloom

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// DefaultFPP is the false-positive probability of a bloom filter setting
// that gives none.
const DefaultFPP = 0.01

// ParseSetting reads a bloom filter setting as written in configuration
// and on the command line: "column[:fpp]", the column a dotted path
// (user_id, user.id) and fpp the false-positive probability, a number
// between 0 and 1 (exclusive). fpp is DefaultFPP when left out.
func ParseSetting(s string) (column string, fpp float64, err error) {
	column, fppText, hasFPP := strings.Cut(s, ":")
	if column == "" || slices.Contains(strings.Split(column, "."), "") {
		return "", 0, fmt.Errorf("want column[:fpp], the column a dotted path like user_id or user.id")
	}
	if !hasFPP {
		return column, DefaultFPP, nil
	}
	fpp, err = strconv.ParseFloat(fppText, 64)
	if err != nil || !(fpp > 0 && fpp < 1) {
		return "", 0, fmt.Errorf("the false-positive probability %s is not a number between 0 and 1 (exclusive), e.g. 0.01", quote(fppText))
	}
	return column, fpp, nil
}

// quote quotes s for a message, cut short when it is long.
func quote(s string) string {
	const max = 80
	if len(s) > max {
		return strconv.Quote(s[:max]) + "..."
	}
	return strconv.Quote(s)
}
