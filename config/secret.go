package config

import (
	"fmt"
	"io"
	"strings"
)

// redacted is what a non-empty Secret prints as.
const redacted = "[redacted]"

// Secret is a config value that must never be printed: a password or a
// secret key. Every way of printing it (String, GoString, MarshalText and
// every fmt verb, including through the structs holding it) yields
// "[redacted]", or "" when it is empty. Value returns the secret itself.
type Secret string

// Value returns the secret itself, for the one place that needs it.
func (s Secret) Value() string { return string(s) }

// String returns "[redacted]", or "" for an empty Secret.
func (s Secret) String() string {
	if s == "" {
		return ""
	}
	return redacted
}

// GoString returns the Go syntax of the redacted value, for %#v.
func (s Secret) GoString() string {
	return fmt.Sprintf("config.Secret(%q)", s.String())
}

// MarshalText returns "[redacted]", or nothing for an empty Secret, so
// encoders (JSON, YAML) never see the value.
func (s Secret) MarshalText() ([]byte, error) {
	return []byte(s.String()), nil
}

// Format prints the redacted value for every verb. Without it, verbs a
// string does not take (%d, %t) would print the raw value in their
// "%!d(config.Secret=...)" complaint.
func (s Secret) Format(f fmt.State, verb rune) {
	switch {
	case verb == 'v' && f.Flag('#'):
		io.WriteString(f, s.GoString())
	case verb == 'q':
		fmt.Fprintf(f, "%q", s.String())
	default:
		io.WriteString(f, s.String())
	}
}

// The structs holding secrets print themselves as copies with the
// secrets replaced. Secret's own methods are not enough: fmt prints a
// pointer to a struct that it cannot format with the verb (%s of a *SASL
// field) as "%!s(*config.SASL=&{...})", and inside that complaint it calls
// no methods, so the raw string would show. Kafka, SASL and Store take
// every verb through Format. Config cannot have a Format method (it has a
// field of that name), so it has String and GoString, which cover every
// verb but the nonsensical ones (%t, %f, %c...) on a *Config inside
// another value.

// Types without methods, so that printing them does not recurse.
type (
	plainConfig  Config
	plainKafka   Kafka
	plainSASL    SASL
	plainStore   Store
	plainTable   Table
	plainCatalog Catalog
)

// String prints the Config as %+v would, with its secrets redacted.
func (c Config) String() string {
	return fmt.Sprintf("%+v", plainConfig(c.withoutSecrets()))
}

// GoString prints the Config as %#v would, with its secrets redacted.
func (c Config) GoString() string {
	return strings.Replace(fmt.Sprintf("%#v", plainConfig(c.withoutSecrets())), "config.plainConfig", "config.Config", 1)
}

func (c Config) withoutSecrets() Config {
	c.Kafka = c.Kafka.withoutSecrets()
	c.Store = c.Store.withoutSecrets()
	if c.Table != nil {
		t := c.Table.withoutSecrets()
		c.Table = &t
	}
	return c
}

// Format prints the Kafka section with its secrets redacted, for every
// verb.
func (k Kafka) Format(f fmt.State, verb rune) {
	formatPlain(f, verb, plainKafka(k.withoutSecrets()), "config.Kafka")
}

// Format prints the SASL section with its password redacted, for every
// verb.
func (s SASL) Format(f fmt.State, verb rune) {
	s.Password = Secret(s.Password.String())
	formatPlain(f, verb, plainSASL(s), "config.SASL")
}

// Format prints the Store section with its secrets redacted, for every
// verb.
func (s Store) Format(f fmt.State, verb rune) {
	formatPlain(f, verb, plainStore(s.withoutSecrets()), "config.Store")
}

// String prints the Table as %+v would, with its secrets redacted. Like
// Config, Table has a field called Format and so no Format method.
func (t Table) String() string {
	return fmt.Sprintf("%+v", plainTable(t.withoutSecrets()))
}

// GoString prints the Table as %#v would, with its secrets redacted.
func (t Table) GoString() string {
	return strings.Replace(fmt.Sprintf("%#v", plainTable(t.withoutSecrets())), "config.plainTable", "config.Table", 1)
}

// Format prints the Catalog section with its secrets redacted, for every
// verb.
func (c Catalog) Format(f fmt.State, verb rune) {
	formatPlain(f, verb, plainCatalog(c.withoutSecrets()), "config.Catalog")
}

func (t Table) withoutSecrets() Table {
	t.Catalog = t.Catalog.withoutSecrets()
	return t
}

func (c Catalog) withoutSecrets() Catalog {
	c.URI = Secret(c.URI.String())
	c.Credential = Secret(c.Credential.String())
	c.Token = Secret(c.Token.String())
	return c
}

func (k Kafka) withoutSecrets() Kafka {
	if k.SASL != nil {
		s := *k.SASL
		s.Password = Secret(s.Password.String())
		k.SASL = &s
	}
	return k
}

func (s Store) withoutSecrets() Store {
	s.SecretKey = Secret(s.SecretKey.String())
	s.SessionToken = Secret(s.SessionToken.String())
	return s
}

// formatPlain prints v, a methodless copy, as verb and the flags of f
// ask; %#v shows the type's real name.
func formatPlain(f fmt.State, verb rune, v any, name string) {
	s := fmt.Sprintf(fmt.FormatString(f, verb), v)
	if verb == 'v' && f.Flag('#') {
		s = strings.Replace(s, fmt.Sprintf("%T", v), name, 1)
	}
	io.WriteString(f, s)
}
