// Package postgres starts a real PostgreSQL server for tests that need
// one: the SQL catalog of Iceberg tables shared by several members.
//
// The server is Debian's postgresql package, which scripts/provision.sh
// installs. Each Start runs initdb in a fresh folder and starts the server
// on a free loopback port, with trust authentication for the user pqsink,
// and stops it when the test ends. PostgreSQL refuses to run as root: as
// root, the server runs as the postgres user the package creates.
package postgres

import (
	"database/sql"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/uptrace/bun/driver/pgdriver"
)

// User is the superuser of a started server, trusted without a password.
const User = "pqsink"

// startAttempts covers the window in which another process can take the
// port between our probe and the server's bind.
const startAttempts = 3

// Server is a running PostgreSQL server.
type Server struct {
	Port int
	dir  string
	bin  string
	as   []string // the command prefix that runs as the server's owner
}

// binDir finds the folder of initdb and pg_ctl: on PATH, or in Debian's
// /usr/lib/postgresql/VERSION/bin, which is not on PATH.
func binDir() (string, error) {
	if p, err := exec.LookPath("initdb"); err == nil {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			return filepath.Dir(real), nil
		}
		return filepath.Dir(p), nil
	}
	matches, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	if len(matches) == 0 {
		return "", fmt.Errorf("PostgreSQL is not installed (no initdb on PATH or in /usr/lib/postgresql/*/bin): run ./scripts/provision.sh, which installs Debian's postgresql package")
	}
	return filepath.Dir(matches[len(matches)-1]), nil
}

// Start starts a server for the test and stops it when the test ends. It
// fails the test, with a hint on how to provision, when PostgreSQL is not
// installed. Each setting is a server setting NAME=VALUE (for one,
// log_statement=all), given to the server's command line.
func Start(t testing.TB, settings ...string) *Server {
	t.Helper()
	bin, err := binDir()
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{bin: bin}
	// The folder is made outside t.TempDir, whose parents only root may
	// enter, so that the postgres user can own it.
	s.dir, err = os.MkdirTemp("", "pqsink-postgres-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(s.dir) })
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			t.Fatalf("running as root, PostgreSQL needs the postgres user of Debian's package: %v", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(s.dir, uid, gid); err != nil {
			t.Fatal(err)
		}
		s.as = []string{"runuser", "-u", "postgres", "--"}
	}
	data := filepath.Join(s.dir, "data")
	s.run(t, filepath.Join(bin, "initdb"), "-D", data, "-U", User, "--auth=trust", "-E", "UTF8", "--no-sync")
	for attempt := 1; ; attempt++ {
		s.Port = freePort(t)
		opts := fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c fsync=off", s.Port, s.dir)
		for _, set := range settings {
			opts += " -c " + set
		}
		err := s.cmd(filepath.Join(bin, "pg_ctl"), "-D", data, "-l", filepath.Join(s.dir, "log"), "-w", "-t", "60",
			"-o", opts, "start").Run()
		if err == nil {
			break
		}
		if attempt == startAttempts {
			log, _ := os.ReadFile(filepath.Join(s.dir, "log"))
			t.Fatalf("pg_ctl start: %v\n%s", err, log)
		}
	}
	t.Cleanup(func() {
		if err := s.cmd(filepath.Join(bin, "pg_ctl"), "-D", data, "-m", "immediate", "-w", "stop").Run(); err != nil {
			t.Errorf("pg_ctl stop: %v", err)
		}
	})
	return s
}

func (s *Server) cmd(name string, args ...string) *exec.Cmd {
	argv := append(append(append([]string{}, s.as...), name), args...)
	return exec.Command(argv[0], argv[1:]...)
}

func (s *Server) run(t testing.TB, name string, args ...string) {
	t.Helper()
	if out, err := s.cmd(name, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", filepath.Base(name), err, out)
	}
}

// Log returns what the server wrote to its log so far.
func (s *Server) Log(t testing.TB) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(s.dir, "log"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// URI is the postgres:// URI of database db on the server.
func (s *Server) URI(db string) string {
	return fmt.Sprintf("postgres://%s@127.0.0.1:%d/%s?sslmode=disable", User, s.Port, db)
}

// CreateDatabase creates database name and returns its URI.
func (s *Server) CreateDatabase(t testing.TB, name string) string {
	t.Helper()
	db := sql.OpenDB(pgdriver.NewConnector(pgdriver.WithDSN(s.URI("postgres")), pgdriver.WithTimeout(30*time.Second)))
	defer db.Close()
	if _, err := db.Exec("CREATE DATABASE " + name); err != nil {
		t.Fatalf("CREATE DATABASE %s: %v", name, err)
	}
	return s.URI(name)
}

func freePort(t testing.TB) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
