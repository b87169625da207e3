package config

import (
	"strings"
	"testing"
)

func TestExpand(t *testing.T) {
	env := envOf(map[string]string{"A": "alpha", "E": "", "N": "3", "D": "$x{y}"})
	for _, tc := range []struct {
		in, want string
		err      string // substring of the error, "" for none
	}{
		{in: "plain", want: "plain"},
		{in: "", want: ""},
		{in: "${A}", want: "alpha"},
		{in: "x${A}y${N}z", want: "xalphay3z"},
		{in: "${E}", want: ""},
		{in: "${A:-d}", want: "alpha"},
		{in: "${E:-d}", want: "d"},
		{in: "${U:-d}", want: "d"},
		{in: "${U:-}", want: ""},
		{in: "${U:-a b:c-d}", want: "a b:c-d"},
		{in: "${U:-${A}}", want: "alpha"},
		{in: "${U:-${V:-deep}}", want: "deep"},
		{in: "${A:-${UNSET}}", want: "alpha"}, // an unused default is not expanded
		{in: "$$", want: "$"},
		{in: "$${A}", want: "${A}"},
		{in: "$$$${A}", want: "$${A}"},
		{in: "$${A}${A}", want: "${A}alpha"},
		{in: "${U:-$$}", want: "$"},
		{in: "a$b", want: "a$b"},
		{in: "$A", want: "$A"},
		{in: "end$", want: "end$"},
		{in: "^events$", want: "^events$"},
		{in: "${D}", want: "$x{y}"}, // values are not expanded again
		{in: "${_a1}", err: "environment variable _a1 is not set"},
		{in: "${U}", err: "environment variable U is not set (use ${U:-default} for a default)"},
		{in: "x${U}", err: "environment variable U is not set"},
		{in: "${E:-${U}}", err: "environment variable U is not set"},
		{in: "${A", err: `unterminated "${"`},
		{in: "${", err: `unterminated "${"`},
		{in: "${A:-x", err: `unterminated "${"`},
		{in: "${U:-${A}", err: `unterminated "${"`},
		{in: "${}", err: `"${" without a variable name`},
		{in: "${:-x}", err: `"${" without a variable name`},
		{in: "${1A}", err: "bad variable reference"},
		{in: "${A-x}", err: "bad variable reference"},
		{in: "${A:x}", err: "bad variable reference"},
		{in: "${A B}", err: "bad variable reference"},
	} {
		got, err := expander{env: env}.expand(tc.in)
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("expand(%q): %v", tc.in, err)
		case tc.err == "" && got != tc.want:
			t.Errorf("expand(%q) = %q, want %q", tc.in, got, tc.want)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("expand(%q) = %q, %v; want an error containing %q", tc.in, got, err, tc.err)
		}
	}
}

// TestExpandSecretErrors: errors about a secret's value say where, not what.
func TestExpandSecretErrors(t *testing.T) {
	for _, in := range []string{"hunter2${", "hunter2${A", "hunter2${A:-hunter3", "${hunter2 x}", "${hunter2-x}", "x${}hunter2"} {
		_, err := expander{env: envOf(nil), secret: true}.expand(in)
		if err == nil {
			t.Errorf("expand(%q): no error", in)
			continue
		}
		if strings.Contains(err.Error(), "hunter") {
			t.Errorf("expand(%q) error leaks the value: %v", in, err)
		}
		if !strings.Contains(err.Error(), "at character") {
			t.Errorf("expand(%q) error does not say where: %v", in, err)
		}
	}
}
