package config

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// secretKeys are the keys whose values never appear in an error message.
var secretKeys = map[string]bool{
	"kafka.sasl.password":      true,
	"store.secret_key":         true,
	"store.session_token":      true,
	"table.catalog.uri":        true,
	"table.catalog.credential": true,
	"table.catalog.token":      true,
}

// problem is one thing wrong with the file, at a key and, when known, a
// line.
type problem struct {
	line int
	key  string
	msg  string
}

func (p *problem) Error() string {
	var b strings.Builder
	b.WriteString("config")
	if p.line > 0 {
		fmt.Fprintf(&b, " line %d", p.line)
	}
	b.WriteString(": ")
	if p.key != "" {
		b.WriteString(p.key)
		b.WriteString(": ")
	}
	b.WriteString(p.msg)
	return b.String()
}

// decoder walks the YAML tree and collects every problem, so that one run
// reports them all.
type decoder struct {
	env      func(string) (string, bool)
	dir      string
	problems []*problem
	// rotateIntervalSet and rotateScheduleSet say that rotate.interval
	// and rotate.schedule were given, for table.freshness_target and its
	// default.
	rotateIntervalSet, rotateScheduleSet bool
}

func (d *decoder) errorf(line int, key, format string, args ...any) {
	d.problems = append(d.problems, &problem{line: line, key: key, msg: fmt.Sprintf(format, args...)})
}

// err joins the problems, in the order of their lines; problems without
// a line (missing keys) come last.
func (d *decoder) err() error {
	if len(d.problems) == 0 {
		return nil
	}
	slices.SortStableFunc(d.problems, func(a, b *problem) int {
		switch {
		case a.line == b.line:
			return 0
		case a.line == 0:
			return 1
		case b.line == 0:
			return -1
		}
		return cmp.Compare(a.line, b.line)
	})
	errs := make([]error, len(d.problems))
	for i, p := range d.problems {
		errs[i] = p
	}
	return errors.Join(errs...)
}

// section is one YAML mapping of the file, read key by key by the typed
// getters below. A getter leaves its destination alone (at its default)
// when the key is absent, null or an empty string, and reports whether it
// stored a value.
type section struct {
	d    *decoder
	path string // dotted path of the mapping; "" for the top level
	line int
	// broken is set when the mapping itself was unusable (wrong type), so
	// that its missing keys are not reported on top of that.
	broken bool
	keys   map[string]*yaml.Node // key node by key
	values map[string]*yaml.Node // value node by key
	set    map[string]bool       // keys a getter stored a value for
	bad    map[string]bool       // keys already reported as wrong
	// emptied records keys whose value became empty by ${} expansion, to
	// explain a "required" error.
	emptied map[string]bool
}

func (d *decoder) section(path string, line int, n *yaml.Node, allowed []string) *section {
	s := &section{
		d: d, path: path, line: line,
		keys: map[string]*yaml.Node{}, values: map[string]*yaml.Node{},
		set: map[string]bool{}, bad: map[string]bool{}, emptied: map[string]bool{},
	}
	if n == nil {
		return s
	}
	s.line = n.Line
	v := deref(n)
	if isNull(v) {
		return s
	}
	if v.Kind != yaml.MappingNode {
		s.broken = true
		d.errorf(n.Line, path, "want a mapping of keys, got %s", describe(v))
		return s
	}
	for i := 0; i+1 < len(v.Content); i += 2 {
		k, val := v.Content[i], v.Content[i+1]
		name := k.Value
		full := join(path, name)
		switch {
		case k.Kind != yaml.ScalarNode:
			d.errorf(k.Line, path, "keys must be plain names")
		case k.Tag == "!!merge":
			d.errorf(k.Line, full, "merge keys (<<) are not supported; write the keys out")
		case !slices.Contains(allowed, name):
			d.errorf(k.Line, full, "unknown key (allowed: %s)%s", strings.Join(allowed, ", "), suggest(name, allowed))
		case s.keys[name] != nil:
			d.errorf(k.Line, full, "duplicate key (first set on line %d)", s.keys[name].Line)
		default:
			s.keys[name] = k
			s.values[name] = val
		}
	}
	return s
}

// suggest proposes the allowed key closest to a misspelt one.
func suggest(name string, allowed []string) string {
	best, bestDist := "", 3+len(name)/8 // at most 2 edits, more for long names
	for _, a := range allowed {
		if d := editDistance(strings.ToLower(name), a); d < bestDist {
			best, bestDist = a, d
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf("; did you mean %s?", best)
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// deref follows an alias to its anchor.
func deref(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	return n
}

func isNull(n *yaml.Node) bool {
	return n == nil || n.Kind == yaml.ScalarNode && n.Tag == "!!null"
}

// describe names what a node holds, for "want X, got Y" messages about
// its type. It never quotes the value: a section written on one line
// where a mapping was expected may hold a secret.
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	}
	switch n.Tag {
	case "!!int", "!!float":
		return "a number"
	case "!!bool":
		return "a boolean"
	}
	return "a string"
}

// quote quotes a value for an error message, shortened when long.
func quote(s string) string {
	const max = 80
	if len(s) > max {
		return strconv.Quote(s[:max]) + "..."
	}
	return strconv.Quote(s)
}

func (s *section) key(name string) string { return join(s.path, name) }

// lineOf is the line of a key's value, or of the section when the key is
// absent.
func (s *section) lineOf(name string) int {
	if n := s.values[name]; n != nil {
		return n.Line
	}
	return s.line
}

// has reports whether a getter stored a value for the key.
func (s *section) has(name string) bool { return s.set[name] }

// given reports whether the key has a value that is not empty, to refuse
// keys that do not apply. An empty value counts as absent, as everywhere.
func (s *section) given(name string) bool {
	v := deref(s.values[name])
	if isNull(v) {
		return false
	}
	if v.Kind != yaml.ScalarNode {
		return true
	}
	t, err := expander{env: s.d.env, secret: true}.expand(v.Value)
	return err != nil || t != ""
}

// fail reports a problem with a key's value.
func (s *section) fail(name, format string, args ...any) {
	s.bad[name] = true
	s.d.errorf(s.lineOf(name), s.key(name), format, args...)
}

// require reports a key that is needed but has no value.
func (s *section) require(name string) {
	if s.has(name) || s.bad[name] || s.broken {
		return
	}
	line := 0
	if s.values[name] != nil {
		line = s.values[name].Line
	}
	msg := "required"
	if s.emptied[name] {
		msg = "required, but empty after ${} expansion"
	}
	s.d.errorf(line, s.key(name), "%s", msg)
}

// scalar expands a scalar node's text. ok is false when the node is null
// or wrong, the latter reported under key.
func (s *section) scalar(key string, n *yaml.Node, want string) (text string, ok bool) {
	v := deref(n)
	if isNull(v) {
		return "", false
	}
	if v.Kind != yaml.ScalarNode {
		s.d.errorf(n.Line, key, "want %s, got %s", want, describe(v))
		return "", false
	}
	x := expander{env: s.d.env, secret: secretKeys[key]}
	text, err := x.expand(v.Value)
	if err != nil {
		s.d.errorf(n.Line, key, "%v", err)
		return "", false
	}
	return text, true
}

// text is the expanded scalar value of a key. ok is false when the key is
// absent, null, empty after expansion, or wrong (then reported).
func (s *section) text(name, want string) (string, bool) {
	n := s.values[name]
	if n == nil {
		return "", false
	}
	t, ok := s.scalar(s.key(name), n, want)
	if !ok {
		if !isNull(deref(n)) {
			s.bad[name] = true
		}
		return "", false
	}
	if t == "" {
		if deref(n).Value != "" {
			s.emptied[name] = true
		}
		return "", false
	}
	return t, true
}

// got quotes a key's value for an error message, unless it is a secret.
func (s *section) got(name, value string) string {
	if secretKeys[s.key(name)] {
		return "a value that is not shown (secret)"
	}
	return quote(value)
}

func (s *section) str(name string, dst *string) bool {
	t, ok := s.text(name, "a string")
	if ok {
		*dst, s.set[name] = t, true
	}
	return ok
}

func (s *section) secret(name string, dst *Secret) bool {
	t, ok := s.text(name, "a string")
	if ok {
		*dst, s.set[name] = Secret(t), true
	}
	return ok
}

// oneOf reads a value that must be one of allowed, compared without case
// and stored in the spelling of allowed. hint, if any, is added to the
// error (for values planned but not supported yet).
func (s *section) oneOf(name string, dst *string, allowed []string, hints map[string]string) bool {
	t, ok := s.text(name, "a string")
	if !ok {
		return false
	}
	for _, a := range allowed {
		if strings.EqualFold(t, a) {
			*dst, s.set[name] = a, true
			return true
		}
	}
	s.fail(name, "%s is not one of %s%s", s.got(name, t), strings.Join(allowed, ", "), hints[strings.ToLower(t)])
	return false
}

func (s *section) boolean(name string, dst *bool) bool {
	t, ok := s.text(name, "true or false")
	if !ok {
		return false
	}
	switch strings.ToLower(t) {
	case "true":
		*dst = true
	case "false":
		*dst = false
	default:
		s.fail(name, "want true or false, got %s", s.got(name, t))
		return false
	}
	s.set[name] = true
	return true
}

// integer reads a whole number in [lo, hi]; underscores may group digits.
func (s *section) integer(name string, dst *int64, lo, hi int64) bool {
	t, ok := s.text(name, "an integer")
	if !ok {
		return false
	}
	v, err := strconv.ParseInt(strings.ReplaceAll(t, "_", ""), 10, 64)
	if err != nil {
		s.fail(name, "want an integer, got %s", s.got(name, t))
		return false
	}
	if !s.inRange(name, v, lo, hi, strconv.FormatInt) {
		return false
	}
	*dst, s.set[name] = v, true
	return true
}

func (s *section) intValue(name string, dst *int, lo, hi int) bool {
	var v int64
	if !s.integer(name, &v, int64(lo), int64(hi)) {
		return false
	}
	*dst = int(v)
	return true
}

// size reads a byte size in [lo, hi]: a plain integer or a number with a
// unit, as ParseSize takes.
func (s *section) size(name string, dst *int64, lo, hi int64) bool {
	t, ok := s.text(name, "a size")
	if !ok {
		return false
	}
	v, err := ParseSize(t)
	if err != nil {
		s.fail(name, "want a size like 256MiB, 64MB or 1048576, got %s", s.got(name, t))
		return false
	}
	if !s.inRange(name, v, lo, hi, func(n int64, _ int) string { return formatSize(n) }) {
		return false
	}
	*dst, s.set[name] = v, true
	return true
}

// duration reads a Go duration ("10m", "500ms", "1h30m") in [lo, hi].
func (s *section) duration(name string, dst *time.Duration, lo, hi time.Duration) bool {
	t, ok := s.text(name, "a duration")
	if !ok {
		return false
	}
	v, err := time.ParseDuration(t)
	if err != nil {
		hint := ""
		if _, err := strconv.ParseFloat(t, 64); err == nil {
			hint = " (a unit is required)"
		}
		s.fail(name, "want a duration like 10m, 30s or 500ms, got %s%s", s.got(name, t), hint)
		return false
	}
	if !s.inRange(name, int64(v), int64(lo), int64(hi), func(n int64, _ int) string { return formatDuration(time.Duration(n)) }) {
		return false
	}
	*dst, s.set[name] = v, true
	return true
}

// inRange reports a number outside [lo, hi], naming the bound in the
// key's own notation.
func (s *section) inRange(name string, v, lo, hi int64, format func(int64, int) string) bool {
	switch {
	case v < lo && lo == 1:
		s.fail(name, "must be positive, got %s", format(v, 10))
	case v < lo && lo == 0:
		s.fail(name, "must not be negative, got %s", format(v, 10))
	case v < lo:
		s.fail(name, "must be at least %s, got %s", format(lo, 10), format(v, 10))
	case v > hi:
		s.fail(name, "must be at most %s, got %s", format(hi, 10), format(v, 10))
	default:
		return true
	}
	return false
}

// list reads a list of non-empty strings. With commas set, a single
// string is also taken, split at commas (for lists set from one
// environment variable).
func (s *section) list(name string, dst *[]string, commas bool) bool {
	n := s.values[name]
	v := deref(n)
	if isNull(v) {
		return false
	}
	key := s.key(name)
	var out []string
	switch {
	case v.Kind == yaml.SequenceNode:
		for i, item := range v.Content {
			ikey := fmt.Sprintf("%s[%d]", key, i)
			t, ok := s.scalar(ikey, item, "a string")
			switch {
			case !ok && isNull(deref(item)), ok && t == "":
				s.d.errorf(item.Line, ikey, "must not be empty")
				s.bad[name] = true
			case !ok:
				s.bad[name] = true
			default:
				out = append(out, t)
			}
		}
	case v.Kind == yaml.ScalarNode && commas:
		t, ok := s.scalar(key, n, "")
		if !ok {
			s.bad[name] = true
			return false
		}
		for part := range strings.SplitSeq(t, ",") {
			if part = strings.TrimSpace(part); part != "" {
				out = append(out, part)
			}
		}
	default:
		s.fail(name, "want a list of strings, got %s", describe(v))
		return false
	}
	if s.bad[name] || len(out) == 0 {
		return false
	}
	*dst, s.set[name] = out, true
	return true
}

// sub reads a nested mapping. An absent or null key gives an empty
// section, so that its keys take their defaults.
func (s *section) sub(name string, allowed []string) *section {
	return s.d.section(s.key(name), s.line, s.values[name], allowed)
}

// optional reads a nested mapping that may be absent: nil when the key is
// absent, null or empty.
func (s *section) optional(name string, allowed []string) *section {
	if !s.given(name) {
		return nil
	}
	return s.sub(name, allowed)
}

// formatSize writes a byte count in the largest binary unit that divides
// it, the way it would be written in the file.
func formatSize(n int64) string {
	switch {
	case n != 0 && n%gib == 0:
		return strconv.FormatInt(n/gib, 10) + "GiB"
	case n != 0 && n%mib == 0:
		return strconv.FormatInt(n/mib, 10) + "MiB"
	case n != 0 && n%kib == 0:
		return strconv.FormatInt(n/kib, 10) + "KiB"
	}
	return strconv.FormatInt(n, 10)
}

// formatDuration writes a duration in its largest whole unit ("10m"
// rather than "10m0s"), falling back to Go's notation.
func formatDuration(d time.Duration) string {
	switch {
	case d == 0:
		return "0s"
	case d%time.Hour == 0:
		return strconv.FormatInt(int64(d/time.Hour), 10) + "h"
	case d%time.Minute == 0:
		return strconv.FormatInt(int64(d/time.Minute), 10) + "m"
	case d%time.Second == 0:
		return strconv.FormatInt(int64(d/time.Second), 10) + "s"
	case d%time.Millisecond == 0:
		return strconv.FormatInt(int64(d/time.Millisecond), 10) + "ms"
	}
	return d.String()
}
