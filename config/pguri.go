package config

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/url"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// The query parameters of a postgres:// catalog URI that the PostgreSQL
// driver reads itself. Any other parameter is sent to the server as a
// run-time setting (SET name TO 'value'), which a server that logs its
// statements writes to its log in clear text.
var (
	pgSSLModes      = []string{"disable", "allow", "prefer", "require", "verify-ca", "verify-full"}
	pgDurationParam = []string{"timeout", "dial_timeout", "connect_timeout", "read_timeout", "write_timeout"}
	// pgConnectionOnly are libpq connection keywords the driver does not
	// read: it would send them as settings, which the server refuses or,
	// for the secret ones, logs.
	pgConnectionOnly = []string{"user", "dbname", "port", "hostaddr", "passfile", "sslpassword", "sslcrl", "sslcompression",
		"requiressl", "krbsrvname", "gsslib", "gssencmode", "channel_binding", "target_session_attrs", "options", "service"}
)

// CheckPostgresURI checks the query parameters of a postgres:// catalog
// URI as the driver would read them, so that a bad one is a configuration
// error rather than the driver's panic: sslmode is one the driver knows,
// the certificate files exist and parse, the timeouts are numbers of
// seconds or durations. A parameter that would reach the server as a
// setting and may carry a secret (password, or a libpq connection keyword
// the driver does not read) is refused. Its errors never quote the URI or
// a parameter's value (a misplaced secret stays hidden).
func CheckPostgresURI(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("not a valid URL")
	}
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return fmt.Errorf("the query is not valid URL query syntax")
	}
	names := make([]string, 0, len(q))
	for k := range q {
		names = append(names, k)
	}
	sort.Strings(names)
	last := func(k string) string {
		if vs := q[k]; len(vs) > 0 {
			return vs[len(vs)-1]
		}
		return ""
	}
	for _, k := range names {
		lk := strings.ToLower(k)
		switch {
		case lk == "password" || strings.Contains(lk, "password") || strings.Contains(lk, "secret") || strings.Contains(lk, "token"):
			return fmt.Errorf("query parameter %s: the driver would send it to the server as a setting, which the server may log in clear text; put the password in the URI's user part (postgres://user:PASSWORD@host:port/database), from an ${ENV} reference", quote(k))
		case slices.Contains(pgConnectionOnly, lk):
			return fmt.Errorf("query parameter %s is not read by pqsink's PostgreSQL driver (it would be sent to the server as a setting); put the user, database and port in the URI itself (postgres://user:password@host:port/database)", quote(k))
		case k == "sslmode":
			if v := last(k); v != "" && !slices.Contains(pgSSLModes, v) {
				return fmt.Errorf("query parameter sslmode: not one of %s", strings.Join(pgSSLModes, ", "))
			}
		case slices.Contains(pgDurationParam, k):
			if err := pgDuration(last(k)); err != nil {
				return fmt.Errorf("query parameter %s: %v", k, err)
			}
		}
	}
	if last("sslmode") == "disable" {
		return nil
	}
	if f := last("sslrootcert"); f != "" {
		pem, err := os.ReadFile(f)
		if err != nil {
			return fmt.Errorf("query parameter sslrootcert: %w", err)
		}
		if !x509.NewCertPool().AppendCertsFromPEM(pem) {
			return fmt.Errorf("query parameter sslrootcert: %s holds no PEM certificate", f)
		}
	}
	cert, key := last("sslcert"), last("sslkey")
	switch {
	case cert != "" && key != "":
		if _, err := tls.LoadX509KeyPair(cert, key); err != nil {
			return fmt.Errorf("query parameters sslcert and sslkey: %w", err)
		}
	case cert != "" || key != "":
		return fmt.Errorf("query parameters sslcert and sslkey go together: set both or neither")
	}
	return nil
}

// pgDuration checks a driver timeout: whole seconds, or a duration with a
// unit (10s, 1m30s).
func pgDuration(v string) error {
	if v == "" {
		return nil
	}
	if _, err := strconv.Atoi(v); err == nil {
		return nil
	}
	if _, err := time.ParseDuration(v); err != nil {
		return errors.New("neither whole seconds nor a duration like 10s")
	}
	return nil
}
