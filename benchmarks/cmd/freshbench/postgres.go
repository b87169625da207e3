package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
)

// postgres is a PostgreSQL server the run starts for its catalog
// (-catalog postgres): a fresh cluster in a temporary folder on a free
// loopback port, trusted for user pqsink, with fsync off. It needs
// PostgreSQL's initdb and pg_ctl (scripts/provision.sh installs Debian's
// package); as root, the server runs as the package's postgres user,
// since PostgreSQL refuses to run as root.
type postgres struct {
	dir, bin string
	as       []string
	port     int
}

// startPostgres starts the server.
func startPostgres(ctx context.Context) (*postgres, error) {
	p := &postgres{}
	if initdb, err := exec.LookPath("initdb"); err == nil {
		if real, err := filepath.EvalSymlinks(initdb); err == nil {
			initdb = real
		}
		p.bin = filepath.Dir(initdb)
	} else if m, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb"); len(m) > 0 {
		p.bin = filepath.Dir(m[len(m)-1])
	} else {
		return nil, errors.New("-catalog postgres: PostgreSQL is not installed (no initdb); run ./scripts/provision.sh, or give a postgres:// URI")
	}
	dir, err := os.MkdirTemp("", "pqsink-freshbench-pg-")
	if err != nil {
		return nil, err
	}
	p.dir = dir
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("-catalog postgres: as root, PostgreSQL runs as the postgres user: %w", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
		p.as = []string{"runuser", "-u", "postgres", "--"}
	}
	data := filepath.Join(dir, "data")
	if out, err := p.cmd(ctx, "initdb", "-D", data, "-U", "pqsink", "--auth=trust", "-E", "UTF8", "--no-sync").CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("initdb: %w\n%s", err, out)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	p.port = l.Addr().(*net.TCPAddr).Port
	l.Close()
	opts := fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c fsync=off", p.port, dir)
	if out, err := p.cmd(ctx, "pg_ctl", "-D", data, "-l", filepath.Join(dir, "log"), "-w", "-t", "60", "-o", opts, "start").CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("pg_ctl start: %w\n%s", err, out)
	}
	return p, nil
}

func (p *postgres) cmd(ctx context.Context, name string, args ...string) *exec.Cmd {
	argv := append(append(append([]string{}, p.as...), filepath.Join(p.bin, name)), args...)
	return exec.CommandContext(ctx, argv[0], argv[1:]...)
}

// uri is the catalog's URI.
func (p *postgres) uri() string {
	return fmt.Sprintf("postgres://pqsink@127.0.0.1:%d/postgres?sslmode=disable", p.port)
}

// stop stops the server and removes its folder.
func (p *postgres) stop() {
	p.cmd(context.Background(), "pg_ctl", "-D", filepath.Join(p.dir, "data"), "-m", "fast", "-w", "stop").Run()
	os.RemoveAll(p.dir)
}
