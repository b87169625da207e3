package config

import (
	"fmt"
	"strings"
)

// expander replaces environment references in one scalar value:
//
//	${VAR}          the variable's value; an error when VAR is unset
//	${VAR:-default} the default when VAR is unset or empty; the default
//	                may itself hold references, and is only expanded
//	                when used
//	$$              a literal $
//
// Any other $ is literal. It runs on scalars after YAML parsing, so a
// value can never change the structure of the file.
type expander struct {
	env func(string) (string, bool)
	// secret keeps the value out of error messages: an error then names
	// the variable and the position, never the text around it.
	secret bool
}

func (x expander) expand(s string) (string, error) {
	if !strings.Contains(s, "$") {
		return s, nil
	}
	out, _, err := x.run(s, 0, true, false)
	return out, err
}

// run expands s from i to its end, or, inside a default, up to the brace
// that closes it; it returns the output and where it stopped. With eval
// false it only checks syntax (an unused default).
func (x expander) run(s string, i int, eval, inDefault bool) (string, int, error) {
	var b strings.Builder
	for i < len(s) {
		c := s[i]
		switch {
		case inDefault && c == '}':
			return b.String(), i, nil
		case c == '$' && strings.HasPrefix(s[i:], "$$"):
			b.WriteByte('$')
			i += 2
		case c == '$' && strings.HasPrefix(s[i:], "${"):
			v, next, err := x.reference(s, i, eval)
			if err != nil {
				return "", 0, err
			}
			b.WriteString(v)
			i = next
		default:
			b.WriteByte(c)
			i++
		}
	}
	return b.String(), i, nil
}

// reference expands the ${...} starting at s[start] and returns where it
// ends.
func (x expander) reference(s string, start int, eval bool) (string, int, error) {
	i := start + 2
	j := i
	for j < len(s) && isNameByte(s[j], j == i) {
		j++
	}
	name := s[i:j]
	switch {
	case j == len(s):
		return "", 0, x.errorf(s, start, `unterminated "${" (no closing "}")`)
	case name == "" && (s[j] == '}' || strings.HasPrefix(s[j:], ":-")):
		return "", 0, x.errorf(s, start, `"${" without a variable name`)
	case s[j] == '}':
		if !eval {
			return "", j + 1, nil
		}
		v, ok := x.env(name)
		if !ok {
			return "", 0, fmt.Errorf("environment variable %s is not set (use ${%s:-default} for a default)", name, name)
		}
		return v, j + 1, nil
	case strings.HasPrefix(s[j:], ":-"):
		v, ok := "", false
		if eval {
			v, ok = x.env(name)
		}
		useDefault := eval && (!ok || v == "")
		def, end, err := x.run(s, j+2, useDefault, true)
		if err != nil {
			return "", 0, err
		}
		if end == len(s) {
			return "", 0, x.errorf(s, start, `unterminated "${" (no closing "}")`)
		}
		if useDefault {
			v = def
		}
		return v, end + 1, nil
	}
	return "", 0, x.errorf(s, start, `bad variable reference: want ${NAME} or ${NAME:-default}, NAME made of letters, digits and _, not starting with a digit`)
}

// errorf reports a syntax problem of the reference at s[at]: for a secret
// by its position only, otherwise quoting the value.
func (x expander) errorf(s string, at int, msg string) error {
	if x.secret {
		return fmt.Errorf("%s at character %d of the value (write $$ for a literal $)", msg, at+1)
	}
	return fmt.Errorf("%s in %q (write $$ for a literal $)", msg, s)
}

func isNameByte(c byte, first bool) bool {
	return c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || !first && '0' <= c && c <= '9'
}
