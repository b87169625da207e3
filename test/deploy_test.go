package test

// The packaging of issue 10, checked without Docker or Kubernetes: the
// Dockerfile, docker-compose.yml, deploy/kubernetes and the Grafana
// dashboard are parsed, every configuration they give pqsink is loaded with
// config.Load and the variables they provide, every command line they run is
// a real subcommand of the binary, and the ports, probes and metric names
// they use are the ones pqsink serves.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/pqsink/pqsink/config"
	"github.com/pqsink/pqsink/internal/events"
	"github.com/pqsink/pqsink/internal/testutil"
)

// envFrom makes a config.Load environment of a map.
func envFrom(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

// checkCommand checks that args is a command line pqsink accepts: its first
// word is a subcommand whose -h exits 0, and every flag it passes is one
// that the subcommand's help lists.
func checkCommand(t *testing.T, where string, args []string) {
	t.Helper()
	if len(args) == 0 {
		t.Errorf("%s: no command", where)
		return
	}
	if strings.HasPrefix(args[0], "-") {
		t.Errorf("%s: command %q starts with a flag, not a subcommand", where, args)
		return
	}
	cmd := exec.Command(pqsinkBinary(t), args[0], "-h")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Errorf("%s: `pqsink %s -h`: %v (not a subcommand?)\n%s", where, args[0], err, out)
		return
	}
	for _, a := range args[1:] {
		if !strings.HasPrefix(a, "-") {
			continue
		}
		name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !regexp.MustCompile(`(?m)^\s+-` + regexp.QuoteMeta(name) + `\b`).Match(out) {
			t.Errorf("%s: `pqsink %s` has no flag -%s; its help:\n%s", where, args[0], name, out)
		}
	}
}

// configFlag returns the value of --config in args.
func configFlag(args []string) string {
	for i, a := range args {
		switch {
		case (a == "--config" || a == "-config") && i+1 < len(args):
			return args[i+1]
		case strings.HasPrefix(a, "--config="), strings.HasPrefix(a, "-config="):
			_, v, _ := strings.Cut(a, "=")
			return v
		}
	}
	return ""
}

// listenPort checks that metrics.listen serves on every interface (probes
// and scrapes come from outside the container) and returns its port.
func listenPort(t *testing.T, where, listen string) int {
	t.Helper()
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		t.Fatalf("%s: metrics.listen %q: %v", where, listen, err)
	}
	if host != "" && host != "0.0.0.0" && host != "::" {
		t.Errorf("%s: metrics.listen %q is reachable only at %s, not from the kubelet, Prometheus or the host", where, listen, host)
	}
	n, err := strconv.Atoi(port)
	if err != nil || n == 0 {
		t.Errorf("%s: metrics.listen %q: want a fixed port", where, listen)
	}
	return n
}

// ---------------------------------------------------------------- Dockerfile

type dockerInstr struct {
	cmd, args string
}

// parseDockerfile returns the instructions of a Dockerfile, continuation
// lines joined and comments dropped.
func parseDockerfile(t *testing.T, file string) []dockerInstr {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var out []dockerInstr
	var cur strings.Builder
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "#") || (line == "" && cur.Len() == 0) {
			continue
		}
		if s, ok := strings.CutSuffix(line, `\`); ok {
			cur.WriteString(s + " ")
			continue
		}
		cur.WriteString(line)
		cmd, args, _ := strings.Cut(strings.TrimSpace(cur.String()), " ")
		out = append(out, dockerInstr{strings.ToUpper(cmd), strings.TrimSpace(args)})
		cur.Reset()
	}
	return out
}

// execForm parses the JSON exec form of ENTRYPOINT and CMD.
func execForm(t *testing.T, in dockerInstr) []string {
	t.Helper()
	var v []string
	if err := json.Unmarshal([]byte(in.args), &v); err != nil {
		t.Errorf("%s %s: not the exec form (a JSON array): %v", in.cmd, in.args, err)
	}
	return v
}

func TestDeployDockerfile(t *testing.T) {
	root := testutil.RepoRoot(t)
	instrs := parseDockerfile(t, filepath.Join(root, "Dockerfile"))
	args := map[string]string{}
	var stages []string // the FROM lines
	var entry, cmd []string
	var user, built, binaryAt string
	for _, in := range instrs {
		switch in.cmd {
		case "ARG":
			if k, v, ok := strings.Cut(in.args, "="); ok {
				args[k] = v
			}
		case "FROM":
			stages = append(stages, os.Expand(in.args, func(k string) string { return args[k] }))
			user = ""
		case "USER":
			user = in.args
		case "RUN":
			if strings.Contains(in.args, "go build") {
				built = in.args
			}
		case "COPY":
			if f := strings.Fields(in.args); len(f) == 3 && strings.HasPrefix(f[0], "--from=") {
				binaryAt = f[2]
			}
		case "ENTRYPOINT":
			entry = execForm(t, in)
		case "CMD":
			cmd = execForm(t, in)
		}
	}
	if len(stages) < 2 {
		t.Fatalf("want a multi-stage build, got FROM %q", stages)
	}

	// The builder's Go is go.mod's.
	gomod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	goVersion := regexp.MustCompile(`(?m)^go (\S+)`).FindSubmatch(gomod)
	if goVersion == nil {
		t.Fatal("go.mod has no go line")
	}
	if want := "golang:" + string(goVersion[1]); !strings.Contains(stages[0], want) {
		t.Errorf("the builder is %q, want %s (go.mod's go line; the image sets GOTOOLCHAIN=local)", stages[0], want)
	}
	if !strings.Contains(built, "CGO_ENABLED=0") || !strings.Contains(built, "./cmd/pqsink") {
		t.Errorf("the build step %q does not build ./cmd/pqsink with CGO_ENABLED=0 (a static binary)", built)
	}

	// A final stage with CA certificates and tzdata, running as non-root,
	// with pqsink on its PATH.
	final := stages[len(stages)-1]
	if !strings.Contains(final, "distroless/static") && !strings.Contains(final, "distroless/base") {
		t.Errorf("the final stage is %q, want a distroless image (CA certificates, tzdata, a non-root user)", final)
	}
	if u, _, _ := strings.Cut(user, ":"); u == "" || u == "0" || u == "root" {
		t.Errorf("the final stage runs as %q, want a non-root user", user)
	}
	if path.Dir(binaryAt) != "/usr/local/bin" && path.Dir(binaryAt) != "/usr/bin" {
		t.Errorf("the binary is copied to %q, not a directory on the image's PATH", binaryAt)
	}
	if !reflect.DeepEqual(entry, []string{path.Base(binaryAt)}) || path.Base(binaryAt) != "pqsink" {
		t.Errorf("ENTRYPOINT %q, binary at %s: want [\"pqsink\"]", entry, binaryAt)
	}
	if want := []string{"run", "--config", "/etc/pqsink/pqsink.yaml"}; !reflect.DeepEqual(cmd, want) {
		t.Errorf("CMD %q, want %q", cmd, want)
	}
	checkCommand(t, "Dockerfile CMD", cmd)
}

// TestDeployDockerignore: the build context keeps go.mod, go.sum and every
// package the binary is built from.
func TestDeployDockerignore(t *testing.T) {
	root := testutil.RepoRoot(t)
	data, err := os.ReadFile(filepath.Join(root, ".dockerignore"))
	if err != nil {
		t.Fatal(err)
	}
	var patterns []string
	for line := range strings.Lines(string(data)) {
		line = strings.TrimSpace(line)
		if line != "" && !strings.HasPrefix(line, "#") {
			patterns = append(patterns, line)
		}
	}
	list := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.Dir}}{{end}}", "./cmd/pqsink")
	list.Dir = root
	out, err := list.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	paths := []string{"go.mod", "go.sum"}
	for dir := range strings.Lines(string(out)) {
		rel, err := filepath.Rel(root, strings.TrimSpace(dir))
		if err == nil && !strings.HasPrefix(rel, "..") {
			paths = append(paths, filepath.ToSlash(rel))
		}
	}
	if len(paths) < 10 {
		t.Fatalf("go list found only %q", paths)
	}
	for _, p := range paths {
		if dockerIgnored(patterns, p) {
			t.Errorf(".dockerignore excludes %s, which the build needs", p)
		}
	}
	// And the matcher itself excludes what it should.
	for _, p := range []string{".git", "pqsink", "test/duckdb", "connector/connector.test"} {
		if !dockerIgnored(patterns, p) {
			t.Errorf(".dockerignore keeps %s", p)
		}
	}
}

// dockerIgnored says whether .dockerignore patterns exclude p or one of its
// parent directories (Docker's rules: filepath.Match, "**" for any number
// of directories, a leading "!" re-includes, the last match wins).
func dockerIgnored(patterns []string, p string) bool {
	ignored := false
	for _, pat := range patterns {
		neg := strings.HasPrefix(pat, "!")
		pat = strings.TrimPrefix(strings.TrimPrefix(pat, "!"), "/")
		for q := p; q != "." && q != "/"; q = path.Dir(q) {
			if globMatch(pat, q) {
				ignored = !neg
				break
			}
		}
	}
	return ignored
}

func globMatch(pat, name string) bool {
	if rest, ok := strings.CutPrefix(pat, "**/"); ok {
		for {
			if globMatch(rest, name) {
				return true
			}
			_, after, found := strings.Cut(name, "/")
			if !found {
				return false
			}
			name = after
		}
	}
	ok, _ := path.Match(pat, name)
	return ok
}

// ------------------------------------------------------------------- compose

type composeService struct {
	Image       string
	Build       any
	Command     any
	Entrypoint  any
	Environment any
	Volumes     []string
	Ports       []string
	DependsOn   map[string]map[string]string `yaml:"depends_on"`
}

// words returns a compose command or entrypoint as a list.
func words(v any) []string {
	switch v := v.(type) {
	case string:
		return strings.Fields(v)
	case []any:
		var out []string
		for _, w := range v {
			out = append(out, fmt.Sprint(w))
		}
		return out
	}
	return nil
}

// env returns a service's environment as compose passes it: $$ is a $.
func (s composeService) env() map[string]string {
	m := map[string]string{}
	switch v := s.Environment.(type) {
	case map[string]any:
		for k, x := range v {
			m[k] = strings.ReplaceAll(fmt.Sprint(x), "$$", "$")
		}
	case []any:
		for _, x := range v {
			k, val, _ := strings.Cut(fmt.Sprint(x), "=")
			m[k] = strings.ReplaceAll(val, "$$", "$")
		}
	}
	return m
}

// hostPath maps a path inside the container to the repository through the
// service's bind mounts.
func (s composeService) hostPath(root, p string) (string, bool) {
	for _, v := range s.Volumes {
		parts := strings.Split(v, ":")
		if len(parts) < 2 || !strings.HasPrefix(parts[0], ".") {
			continue
		}
		if rel, ok := strings.CutPrefix(p, strings.TrimSuffix(parts[1], "/")+"/"); ok {
			return filepath.Join(root, parts[0], rel), true
		}
	}
	return "", false
}

func loadCompose(t *testing.T, root string) map[string]composeService {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, "docker-compose.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Services map[string]composeService
	}
	if err := yaml.Unmarshal(data, &doc); err != nil {
		t.Fatalf("docker-compose.yml: %v", err)
	}
	if len(doc.Services) == 0 {
		t.Fatal("docker-compose.yml has no services")
	}
	return doc.Services
}

// TestDeployComposeValid has docker-compose 1.29, Debian's package, check
// docker-compose.yml: it needs no Docker engine for that, and it refuses
// keys of the Compose format that newer versions take (a top-level name:),
// so a file it takes works with both.
func TestDeployComposeValid(t *testing.T) {
	bin, err := exec.LookPath("docker-compose")
	if err != nil {
		t.Fatalf("docker-compose is not installed (%v): %s", err, testutil.ProvisionHint)
	}
	root := testutil.RepoRoot(t)
	cmd := exec.Command(bin, "-f", filepath.Join(root, "docker-compose.yml"), "config", "--quiet")
	cmd.Dir = t.TempDir() // nothing of the caller's directory, such as a .env file
	if out, err := cmd.CombinedOutput(); err != nil || len(out) != 0 {
		t.Errorf("docker-compose config: %v\n%s", err, out)
	}
}

func TestDeployCompose(t *testing.T) {
	root := testutil.RepoRoot(t)
	services := loadCompose(t, root)

	for name, s := range services {
		for dep := range s.DependsOn {
			if _, ok := services[dep]; !ok {
				t.Errorf("service %s depends on %s, which does not exist", name, dep)
			}
		}
	}
	byImage := func(prefix string) []string {
		var names []string
		for name, s := range services {
			if strings.HasPrefix(s.Image, prefix) {
				names = append(names, name)
			}
		}
		slices.Sort(names)
		return names
	}
	for _, img := range []string{"apache/kafka:", "minio/minio:", "minio/mc:", "confluentinc/cp-schema-registry:"} {
		if len(byImage(img)) == 0 {
			t.Errorf("no service runs %s", img)
		}
	}
	// KRaft: one node that is broker and controller, no ZooKeeper.
	var kafkaSvc string
	for _, name := range byImage("apache/kafka:") {
		if roles := services[name].env()["KAFKA_PROCESS_ROLES"]; roles != "" {
			kafkaSvc = name
			if !strings.Contains(roles, "controller") || !strings.Contains(roles, "broker") {
				t.Errorf("service %s: KAFKA_PROCESS_ROLES %q, want broker,controller (KRaft)", name, roles)
			}
		}
	}
	if kafkaSvc == "" {
		t.Fatal("no Kafka broker service (apache/kafka with KAFKA_PROCESS_ROLES)")
	}
	for name := range services {
		if strings.Contains(name, "zookeeper") {
			t.Errorf("service %s: KRaft needs no ZooKeeper", name)
		}
	}
	advertised := services[kafkaSvc].env()["KAFKA_ADVERTISED_LISTENERS"]
	var topicsCreated, bucketsCreated string
	for _, s := range services {
		c := strings.Join(append(words(s.Entrypoint), words(s.Command)...), " ")
		if strings.Contains(c, "kafka-topics.sh") {
			topicsCreated += c
		}
		if strings.Contains(c, "mc mb") {
			bucketsCreated += c
		}
	}

	// The pqsink services: built from the Dockerfile, each with a config that
	// loads and addresses the other services.
	var sinks []string
	builtHere := false
	for name, s := range services {
		if s.Build == nil && !strings.HasPrefix(s.Image, "pqsink:") {
			continue
		}
		sinks = append(sinks, name)
		if b, ok := s.Build.(string); ok && (b == "." || b == "./") {
			builtHere = true
		}
	}
	slices.Sort(sinks)
	if len(sinks) == 0 || !builtHere {
		t.Fatalf("no pqsink service built from ./Dockerfile (build: .); pqsink services: %q", sinks)
	}
	consumed := map[string]bool{}
	for _, name := range sinks {
		s := services[name]
		args := words(s.Command)
		if s.Entrypoint != nil {
			t.Errorf("service %s overrides the image's entry point", name)
		}
		checkCommand(t, "compose service "+name, args)
		cfgPath := configFlag(args)
		host, ok := s.hostPath(root, cfgPath)
		if !ok {
			t.Errorf("service %s: --config %q is not in a bind mount of the repository", name, cfgPath)
			continue
		}
		c, err := config.Load(host, envFrom(s.env()))
		if err != nil {
			t.Errorf("service %s: %s does not load with the service's environment: %v", name, host, err)
			continue
		}
		port := listenPort(t, "service "+name, c.Metrics.Listen)
		published := false
		for _, p := range s.Ports {
			published = published || strings.HasSuffix(p, ":"+strconv.Itoa(port))
		}
		if !published {
			t.Errorf("service %s: metrics port %d is not published (ports %q)", name, port, s.Ports)
		}
		for _, b := range c.Kafka.Brokers {
			h, _, _ := net.SplitHostPort(b)
			if h != kafkaSvc || !strings.Contains(advertised, "//"+b) {
				t.Errorf("service %s: broker %s is not a listener Kafka advertises (%s)", name, b, advertised)
			}
		}
		for _, topic := range c.Kafka.Topics {
			consumed[topic] = true
			if !regexp.MustCompile(`(^|[^\w.-])` + regexp.QuoteMeta(topic) + `([^\w.-]|$)`).MatchString(topicsCreated) {
				t.Errorf("service %s consumes %s, which no service creates (auto-creation is off)", name, topic)
			}
		}
		if u := c.Store.Endpoint; u != "" {
			h := strings.TrimPrefix(strings.TrimPrefix(u, "http://"), "https://")
			h, _, _ = net.SplitHostPort(h)
			if _, ok := services[h]; !ok || !strings.HasPrefix(services[h].Image, "minio/minio:") {
				t.Errorf("service %s: store.endpoint %s is not the MinIO service", name, u)
			}
		}
		bucket, _, _ := strings.Cut(strings.TrimPrefix(c.Store.URL, "s3://"), "/")
		if !strings.Contains(bucketsCreated, "/"+bucket) {
			t.Errorf("service %s: bucket %s of %s is not created at startup (%q)", name, bucket, c.Store.URL, bucketsCreated)
		}
		if r := c.Format.Registry; r != nil {
			h := strings.TrimPrefix(r.URL, "http://")
			h, _, _ = net.SplitHostPort(h)
			if !strings.HasPrefix(services[h].Image, "confluentinc/cp-schema-registry:") {
				t.Errorf("service %s: format.registry.url %s is not the Schema Registry service", name, r.URL)
			}
		}
	}

	// Producers write the topics the sinks read, records that fit.
	produced := map[string]bool{}
	for name, s := range services {
		ep := words(s.Entrypoint)
		if len(ep) < 3 || !strings.HasSuffix(ep[1], "produce.sh") {
			continue
		}
		script, ok := s.hostPath(root, ep[1])
		if !ok {
			t.Errorf("service %s: %s is not in a bind mount of the repository", name, ep[1])
			continue
		}
		env := s.env()
		produced[env["TOPIC"]] = true
		if b := env["BROKERS"]; !strings.Contains(advertised, "//"+b) {
			t.Errorf("service %s: BROKERS %s is not a listener Kafka advertises", name, b)
		}
		checkProducer(t, name, script, ep[2])
	}
	for topic := range consumed {
		if !produced[topic] {
			t.Errorf("no producer writes %s, which a sink consumes", topic)
		}
	}
}

// checkProducer runs produce.sh KIND --print and converts what it prints
// with the schema the sink uses: every record fits.
func checkProducer(t *testing.T, service, script, kind string) {
	t.Helper()
	dir := t.TempDir()
	out, err := exec.Command("sh", script, kind, "--print", "250").Output()
	if err != nil {
		t.Errorf("service %s: sh %s %s --print: %v", service, script, kind, err)
		return
	}
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(lines) != 250 {
		t.Errorf("service %s: %d records printed, want 250", service, len(lines))
	}
	var values bytes.Buffer
	var convert []string
	switch kind {
	case "json":
		for _, l := range lines {
			key, v, ok := strings.Cut(l, "\t")
			if !ok || key == "" {
				t.Fatalf("service %s: %q is not KEY<TAB>VALUE", service, l)
			}
			values.WriteString(v + "\n")
		}
		convert = []string{"--schema", filepath.Join(filepath.Dir(script), "events.schema")}
	case "avro":
		values.WriteString(string(out))
		convert = []string{"--avro-schema", filepath.Join(filepath.Dir(script), "order.avsc")}
	default:
		t.Errorf("service %s: unknown producer kind %q", service, kind)
		return
	}
	in := filepath.Join(dir, "in.jsonl")
	if err := os.WriteFile(in, values.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(pqsinkBinary(t), append(append([]string{"convert", "--quiet"}, convert...), in, filepath.Join(dir, "out.parquet"))...)
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("service %s: the produced records do not convert with %s: %v\n%s", service, convert[1], err, msg)
	}
}

// TestDeployComposeConfigIsTheTests: deploy/compose/pqsink.yaml is the
// configuration test/run_config_test.go runs, but for the addresses, the
// bucket, metrics.listen and rotate.interval (ROTATE_INTERVAL, defaulting
// to the tests' 10m); and its events.schema is the generator's.
func TestDeployComposeConfigIsTheTests(t *testing.T) {
	root := testutil.RepoRoot(t)
	env := envFrom(map[string]string{"S3_ACCESS_KEY": "k", "S3_SECRET_KEY": "s"})
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "events.schema"), []byte(events.Schema), 0o644); err != nil {
		t.Fatal(err)
	}
	testsFile := filepath.Join(dir, "pqsink.yaml")
	if err := os.WriteFile(testsFile, fmt.Appendf(nil, issueConfig, "127.0.0.1:9092", "bucket", "http://127.0.0.1:9000"), 0o644); err != nil {
		t.Fatal(err)
	}
	want, err := config.Load(testsFile, env)
	if err != nil {
		t.Fatalf("the tests' configuration: %v", err)
	}
	got, err := config.Load(filepath.Join(root, "deploy/compose/pqsink.yaml"), env)
	if err != nil {
		t.Fatalf("deploy/compose/pqsink.yaml: %v", err)
	}
	if got.Rotate.Interval != 10*time.Minute {
		t.Errorf("without ROTATE_INTERVAL, rotate.interval is %v, want the tests' 10m", got.Rotate.Interval)
	}
	for _, c := range []*config.Config{want, got} {
		c.Kafka.Brokers, c.Store.URL, c.Store.Endpoint, c.Metrics.Listen = nil, "", "", ""
		c.Dir, c.Format.SchemaFile = "", filepath.Base(c.Format.SchemaFile)
	}
	diffConfigs(t, "deploy/compose/pqsink.yaml differs from the tests' configuration", got, want)
	for _, f := range []string{"deploy/compose/events.schema", "deploy/kubernetes/events.schema"} {
		data, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		if string(data) != events.Schema {
			t.Errorf("%s is not internal/events.Schema, the schema of the generated events", f)
		}
	}
}

// diffConfigs reports the sections (top-level fields) in which got and want
// differ.
func diffConfigs(t *testing.T, what string, got, want *config.Config) {
	t.Helper()
	gv, wv := reflect.ValueOf(*got), reflect.ValueOf(*want)
	for i := range gv.NumField() {
		if g, w := gv.Field(i).Interface(), wv.Field(i).Interface(); !reflect.DeepEqual(g, w) {
			t.Errorf("%s in %s:\n got %+v\nwant %+v", what, gv.Type().Field(i).Name, g, w)
		}
	}
}

// ---------------------------------------------------------------- Kubernetes

type k8sObject struct {
	Kind     string
	Metadata struct {
		Name   string
		Labels map[string]string
	}
	StringData map[string]string `yaml:"stringData"`
	Spec       yaml.Node
}

type k8sContainer struct {
	Name    string
	Image   string
	Command []string
	Args    []string
	Env     []struct {
		Name, Value string
		ValueFrom   *struct {
			FieldRef *struct {
				FieldPath string `yaml:"fieldPath"`
			} `yaml:"fieldRef"`
		} `yaml:"valueFrom"`
	}
	EnvFrom []struct {
		SecretRef    *struct{ Name string } `yaml:"secretRef"`
		ConfigMapRef *struct{ Name string } `yaml:"configMapRef"`
	} `yaml:"envFrom"`
	Ports []struct {
		Name          string
		ContainerPort int `yaml:"containerPort"`
	}
	LivenessProbe  *k8sProbe `yaml:"livenessProbe"`
	ReadinessProbe *k8sProbe `yaml:"readinessProbe"`
	Resources      struct {
		Requests, Limits map[string]string
	}
	VolumeMounts []struct {
		Name      string
		MountPath string `yaml:"mountPath"`
	} `yaml:"volumeMounts"`
}

type k8sProbe struct {
	HTTPGet *struct {
		Path string
		Port any
	} `yaml:"httpGet"`
}

type k8sDeployment struct {
	Replicas int
	Selector struct {
		MatchLabels map[string]string `yaml:"matchLabels"`
	}
	Template struct {
		Metadata struct{ Labels map[string]string }
		Spec     struct {
			SecurityContext struct {
				RunAsUser    int  `yaml:"runAsUser"`
				RunAsNonRoot bool `yaml:"runAsNonRoot"`
			} `yaml:"securityContext"`
			TerminationGracePeriodSeconds int `yaml:"terminationGracePeriodSeconds"`
			Containers                    []k8sContainer
			Volumes                       []struct {
				Name      string
				ConfigMap *struct{ Name string } `yaml:"configMap"`
			}
		}
	}
}

type k8sPodMonitor struct {
	Selector struct {
		MatchLabels map[string]string `yaml:"matchLabels"`
	}
	PodMetricsEndpoints []struct{ Port, Path string } `yaml:"podMetricsEndpoints"`
}

// quantity parses a Kubernetes memory quantity into bytes.
func quantity(t *testing.T, s string) int64 {
	t.Helper()
	units := []struct {
		suffix string
		mult   int64
	}{{"Ki", 1 << 10}, {"Mi", 1 << 20}, {"Gi", 1 << 30}, {"Ti", 1 << 40}, {"k", 1e3}, {"M", 1e6}, {"G", 1e9}, {"T", 1e12}}
	for _, u := range units {
		if n, ok := strings.CutSuffix(s, u.suffix); ok {
			v, err := strconv.ParseInt(n, 10, 64)
			if err != nil {
				t.Fatalf("quantity %q: %v", s, err)
			}
			return v * u.mult
		}
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Fatalf("quantity %q: %v", s, err)
	}
	return v
}

// k8sKustomization is what the tests read of a kustomization.yaml.
type k8sKustomization struct {
	Kind               string
	Namespace          string
	Resources          []string
	Components         []string
	ConfigMapGenerator []struct {
		Name  string
		Files []string
	} `yaml:"configMapGenerator"`
	Images []struct{ Name string }
}

// loadKustomization reads dir's kustomization.yaml and the objects of its
// resources and components, by kind.
func loadKustomization(t *testing.T, dir string) (k8sKustomization, map[string][]k8sObject) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var kust k8sKustomization
	if err := yaml.Unmarshal(data, &kust); err != nil {
		t.Fatalf("%s/kustomization.yaml: %v", dir, err)
	}
	objects := map[string][]k8sObject{}
	for _, r := range kust.Resources {
		data, err := os.ReadFile(filepath.Join(dir, r))
		if err != nil {
			t.Errorf("%s/kustomization.yaml lists %s: %v", dir, r, err)
			continue
		}
		dec := yaml.NewDecoder(bytes.NewReader(data))
		for {
			var o k8sObject
			if err := dec.Decode(&o); err != nil {
				if err.Error() != "EOF" {
					t.Fatalf("%s: %v", r, err)
				}
				break
			}
			objects[o.Kind] = append(objects[o.Kind], o)
		}
	}
	for _, c := range kust.Components {
		_, more := loadKustomization(t, filepath.Join(dir, c))
		for kind, objs := range more {
			objects[kind] = append(objects[kind], objs...)
		}
	}
	return kust, objects
}

func TestDeployKubernetes(t *testing.T) {
	root := testutil.RepoRoot(t)
	dir := filepath.Join(root, "deploy/kubernetes")
	kust, objects := loadKustomization(t, dir)

	// The default applies without the Prometheus Operator's CRDs and never
	// replaces a real Secret: the PodMonitor and the placeholder Secret are
	// components, named (commented out) in kustomization.yaml.
	if len(kust.Components) != 0 {
		t.Errorf("kustomization.yaml applies the components %q by default", kust.Components)
	}
	for _, kind := range []string{"Secret", "PodMonitor"} {
		if len(objects[kind]) != 0 {
			t.Errorf("kubectl apply -k deploy/kubernetes would apply a %s", kind)
		}
	}
	data, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var named []string
	for _, m := range regexp.MustCompile(`(?m)^#\s+-\s+(components/\S+)\s*$`).FindAllSubmatch(data, -1) {
		named = append(named, string(m[1]))
	}
	if want := []string{"components/podmonitor", "components/secret"}; !slices.Equal(named, want) {
		t.Errorf("kustomization.yaml's commented components: %q, want %q", named, want)
	}
	for _, c := range named {
		comp, more := loadKustomization(t, filepath.Join(dir, c))
		if comp.Kind != "Component" {
			t.Errorf("%s is a %q, want a kustomize Component", c, comp.Kind)
		}
		for kind, objs := range more {
			objects[kind] = append(objects[kind], objs...)
		}
	}

	one := func(kind string, dst any) k8sObject {
		t.Helper()
		if len(objects[kind]) != 1 {
			t.Fatalf("want one %s, got %d", kind, len(objects[kind]))
		}
		o := objects[kind][0]
		if dst != nil {
			if err := o.Spec.Decode(dst); err != nil {
				t.Fatalf("%s spec: %v", kind, err)
			}
		}
		return o
	}
	var dep k8sDeployment
	one("Deployment", &dep)
	var pm k8sPodMonitor
	one("PodMonitor", &pm)
	secret := one("Secret", nil)
	if dep.Replicas < 2 {
		t.Errorf("the Deployment has %d replicas; it shows scaling out in one group", dep.Replicas)
	}
	pod := dep.Template.Spec
	if len(pod.Containers) != 1 {
		t.Fatalf("want one container, got %d", len(pod.Containers))
	}
	c := pod.Containers[0]
	labels := dep.Template.Metadata.Labels
	for k, v := range dep.Selector.MatchLabels {
		if labels[k] != v {
			t.Errorf("the Deployment's selector %s=%s does not match its pods (%v)", k, v, labels)
		}
	}
	for k, v := range pm.Selector.MatchLabels {
		if labels[k] != v {
			t.Errorf("the PodMonitor's selector %s=%s does not match the pods (%v)", k, v, labels)
		}
	}
	if len(c.Command) != 0 {
		t.Errorf("the container overrides the image's entry point with %q", c.Command)
	}
	checkCommand(t, "Deployment args", c.Args)
	image, _, _ := strings.Cut(c.Image, ":")
	if !slices.ContainsFunc(kust.Images, func(i struct{ Name string }) bool { return i.Name == image }) {
		t.Errorf("kustomization.yaml images does not set %s", image)
	}

	// The config: the generated ConfigMap, mounted where --config points,
	// loaded with the variables the Secret and env provide.
	cfgPath := configFlag(c.Args)
	var files []string
	for _, v := range pod.Volumes {
		for _, m := range c.VolumeMounts {
			if m.Name != v.Name || v.ConfigMap == nil || path.Dir(cfgPath) != path.Clean(m.MountPath) {
				continue
			}
			for _, g := range kust.ConfigMapGenerator {
				if g.Name == v.ConfigMap.Name {
					files = g.Files
				}
			}
		}
	}
	if !slices.Contains(files, path.Base(cfgPath)) {
		t.Fatalf("--config %s is not a file of a ConfigMap mounted at %s (files %q)", cfgPath, path.Dir(cfgPath), files)
	}
	mounted := t.TempDir()
	for _, f := range files {
		data, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(mounted, path.Base(f)), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	env := map[string]string{}
	const podName = "pqsink-6f7d9c8b5-x2x7q" // what the Downward API gives metadata.name
	for _, e := range c.Env {
		env[e.Name] = e.Value
		if e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.name" {
			env[e.Name] = podName
		}
	}
	for _, e := range c.EnvFrom {
		if e.SecretRef == nil || e.SecretRef.Name != secret.Metadata.Name {
			t.Errorf("envFrom refers to %+v, not the Secret %s", e, secret.Metadata.Name)
			continue
		}
		for k, v := range secret.StringData {
			env[k] = v
		}
	}
	cfg, err := config.Load(filepath.Join(mounted, path.Base(cfgPath)), envFrom(env))
	if err != nil {
		t.Fatalf("the ConfigMap's %s does not load with the Secret's and the container's variables: %v", path.Base(cfgPath), err)
	}

	// Static membership: each pod is a member under its own name, so that a
	// container restarted in its pod gets its partitions back with no
	// rebalance.
	if cfg.Kafka.InstanceID != podName {
		t.Errorf("kafka.instance_id is %q, want the pod's name (from the Downward API)", cfg.Kafka.InstanceID)
	}

	// Probes and PodMonitor on the metrics.listen port.
	port := listenPort(t, "ConfigMap", cfg.Metrics.Listen)
	portName := ""
	for _, p := range c.Ports {
		if p.ContainerPort == port {
			portName = p.Name
		}
	}
	if portName == "" {
		t.Errorf("no container port is metrics.listen's %d (%+v)", port, c.Ports)
	}
	for _, probe := range []struct {
		name, path string
		p          *k8sProbe
	}{{"livenessProbe", "/healthz", c.LivenessProbe}, {"readinessProbe", "/readyz", c.ReadinessProbe}} {
		if probe.p == nil || probe.p.HTTPGet == nil {
			t.Errorf("no HTTP %s", probe.name)
			continue
		}
		if probe.p.HTTPGet.Path != probe.path {
			t.Errorf("%s path %s, want %s", probe.name, probe.p.HTTPGet.Path, probe.path)
		}
		if p := fmt.Sprint(probe.p.HTTPGet.Port); p != portName && p != strconv.Itoa(port) {
			t.Errorf("%s port %s, want %s (%d, metrics.listen)", probe.name, p, portName, port)
		}
	}
	if len(pm.PodMetricsEndpoints) == 0 {
		t.Error("the PodMonitor has no endpoint")
	}
	for _, e := range pm.PodMetricsEndpoints {
		if e.Port != portName || portName == "" {
			t.Errorf("the PodMonitor scrapes port %q; the pod's metrics port is %q", e.Port, portName)
		}
		if e.Path != "" && e.Path != "/metrics" {
			t.Errorf("the PodMonitor scrapes %s, want /metrics", e.Path)
		}
	}

	// Memory from memory.limit: limit = memory.limit × 1.25 + 64Mi, and the
	// request equals the limit.
	want := cfg.Memory.Limit*5/4 + 64<<20
	lim, req := c.Resources.Limits["memory"], c.Resources.Requests["memory"]
	if lim == "" || req == "" {
		t.Fatalf("memory requests %q and limits %q must both be set", req, lim)
	}
	if got := quantity(t, lim); got != want {
		t.Errorf("memory limit %s = %d bytes, want memory.limit (%d) × 1.25 + 64Mi = %d (%dMi)", lim, got, cfg.Memory.Limit, want, want>>20)
	}
	if quantity(t, req) != quantity(t, lim) {
		t.Errorf("memory request %s differs from the limit %s", req, lim)
	}
	if c.Resources.Requests["cpu"] == "" {
		t.Error("no CPU request")
	}
	if g := time.Duration(pod.TerminationGracePeriodSeconds) * time.Second; g <= cfg.ShutdownTimeout {
		t.Errorf("terminationGracePeriodSeconds %v is not above shutdown_timeout %v: the kubelet would kill a finishing shutdown", g, cfg.ShutdownTimeout)
	}
	if kust.Namespace == "" {
		t.Error("kustomization.yaml sets no namespace")
	}

	// The pod runs as the image's user.
	var user string
	for _, in := range parseDockerfile(t, filepath.Join(root, "Dockerfile")) {
		if in.cmd == "USER" {
			user, _, _ = strings.Cut(in.args, ":")
		}
	}
	if sc := pod.SecurityContext; !sc.RunAsNonRoot || strconv.Itoa(sc.RunAsUser) != user {
		t.Errorf("the pod runs as user %d (runAsNonRoot %v); the image's user is %s", sc.RunAsUser, sc.RunAsNonRoot, user)
	}
}

// ------------------------------------------------------------------- Grafana

// TestDeployGrafanaDashboard: every metric the dashboard queries is one the
// sink exports (connector's sources) or one of the Go and process
// collectors it registers; and every pqsink metric is on the dashboard.
func TestDeployGrafanaDashboard(t *testing.T) {
	root := testutil.RepoRoot(t)
	data, err := os.ReadFile(filepath.Join(root, "deploy/grafana/pqsink-dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	var dash any
	if err := json.Unmarshal(data, &dash); err != nil {
		t.Fatalf("the dashboard is not JSON: %v", err)
	}
	var queries []string
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, x := range v {
				if s, ok := x.(string); ok && (k == "expr" || k == "query" || k == "definition") {
					queries = append(queries, s)
				}
				walk(x)
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		}
	}
	walk(dash)
	if len(queries) < 10 {
		t.Fatalf("the dashboard has %d queries", len(queries))
	}

	// The metrics of the sink, as the sources of connector/ and of the
	// packages under it (connector/maintenance's collector) name them.
	exported := map[string]bool{}
	var sources []byte
	err = filepath.WalkDir(filepath.Join(root, "connector"), func(f string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(f, ".go") || strings.HasSuffix(f, "_test.go") {
			return err
		}
		src, err := os.ReadFile(f)
		sources = append(sources, src...)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range regexp.MustCompile(`\bd\("([a-z0-9_]+)"`).FindAllSubmatch(sources, -1) {
		exported["pqsink_"+string(m[1])] = true
	}
	for _, m := range regexp.MustCompile(`NewDesc\(\s*"(pqsink_[a-z0-9_]+)"`).FindAllSubmatch(sources, -1) {
		exported[string(m[1])] = true
	}
	histograms := map[string]bool{}
	for _, m := range regexp.MustCompile(`Name:\s*"(pqsink_[a-z0-9_]+)"`).FindAllSubmatch(sources, -1) {
		exported[string(m[1])] = true
		histograms[string(m[1])] = true
	}
	if len(exported) < 15 {
		t.Fatalf("found only %d metrics in connector/: %v", len(exported), exported)
	}
	collectors := map[string]string{"process_": "collectors.NewProcessCollector", "go_": "collectors.NewGoCollector"}

	used := map[string]bool{}
	metricName := regexp.MustCompile(`\b(pqsink|process|go)_[a-z0-9_]+\b`)
	for _, q := range queries {
		for _, name := range metricName.FindAllString(q, -1) {
			base := name
			for _, suffix := range []string{"_bucket", "_sum", "_count"} {
				if b, ok := strings.CutSuffix(name, suffix); ok && histograms[b] {
					base = b
				}
			}
			used[base] = true
			switch {
			case strings.HasPrefix(name, "pqsink_"):
				if !exported[base] {
					t.Errorf("the dashboard queries %s, which connector/ does not export: %s", name, q)
				}
			default:
				prefix := name[:strings.IndexByte(name, '_')+1]
				if !bytes.Contains(sources, []byte(collectors[prefix])) {
					t.Errorf("the dashboard queries %s, but connector/ does not register %s", name, collectors[prefix])
				}
			}
		}
	}
	for name := range exported {
		if !used[name] {
			t.Errorf("the dashboard does not chart %s", name)
		}
	}
}

// ---------------------------------------------------------------------- docs

// TestDocConfigKeysExist is the converse of config's TestDocsCoverEveryKey:
// every key in a key table of docs/configuration.md is a key the config
// accepts.
func TestDocConfigKeysExist(t *testing.T) {
	root := testutil.RepoRoot(t)
	data, err := os.ReadFile(filepath.Join(root, "docs/configuration.md"))
	if err != nil {
		t.Fatal(err)
	}
	keyRow := regexp.MustCompile("^\\| `([a-z_]+(?:\\.[a-z_]+)*)` \\|")
	var keys []string
	inKeyTable := false
	for line := range strings.Lines(string(data)) {
		switch {
		case strings.HasPrefix(line, "| key |"):
			inKeyTable = true
		case !strings.HasPrefix(line, "|"):
			inKeyTable = false
		case inKeyTable:
			if m := keyRow.FindStringSubmatch(line); m != nil {
				keys = append(keys, m[1])
			}
		}
	}
	if len(keys) < 60 {
		t.Fatalf("found only %d keys in docs/configuration.md's key tables", len(keys))
	}
	unknown := func(key string) bool {
		doc := map[string]any{
			"kafka":  map[string]any{"brokers": []string{"b:9092"}, "group": "g", "topics": []string{"t"}},
			"store":  map[string]any{"url": "file:///out"},
			"format": map[string]any{"type": "variant"},
		}
		m := doc
		parts := strings.Split(key, ".")
		for _, p := range parts[:len(parts)-1] {
			sub, ok := m[p].(map[string]any)
			if !ok {
				sub = map[string]any{}
				m[p] = sub
			}
			m = sub
		}
		m[parts[len(parts)-1]] = "x"
		y, err := yaml.Marshal(doc)
		if err != nil {
			t.Fatal(err)
		}
		_, err = config.Parse(y, nil)
		for i := range parts {
			if err != nil && strings.Contains(err.Error(), strings.Join(parts[:i+1], ".")+": unknown key") {
				return true
			}
		}
		return false
	}
	if !unknown("store.no_such_key") || !unknown("no_such_section.key") {
		t.Fatal("the probe does not recognise an unknown key")
	}
	for _, k := range keys {
		if unknown(k) {
			t.Errorf("docs/configuration.md documents %s, which is not a config key", k)
		}
	}

	// The "Defaults at a glance" file loads, and its values are the
	// defaults.
	_, rest, ok := strings.Cut(string(data), "## Defaults at a glance")
	_, rest, ok2 := strings.Cut(rest, "```yaml\n")
	block, _, ok3 := strings.Cut(rest, "```")
	if !ok || !ok2 || !ok3 {
		t.Fatal("docs/configuration.md has no yaml block under \"Defaults at a glance\"")
	}
	c, err := config.Parse([]byte(block), nil)
	if err != nil {
		t.Fatalf("the defaults at a glance do not load: %v", err)
	}
	d, err := config.Parse([]byte("kafka: {brokers: [127.0.0.1:9092], group: pqsink-archive, topics: [events]}\nstore: {url: 's3://archive/raw'}\nformat: {type: variant}\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	diffConfigs(t, "the defaults at a glance are not the defaults", c, d)
}

// TestDocLinksStayInRepo: the README and the docs link only to files of
// the repository that exist, and never to the workspace around it.
func TestDocLinksStayInRepo(t *testing.T) {
	root := testutil.RepoRoot(t)
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	docs = append(docs, filepath.Join(root, "README.md"))
	for _, want := range []string{"architecture.md", "configuration.md", "exactly-once.md", "operations.md", "variant.md"} {
		if !slices.Contains(docs, filepath.Join(root, "docs", want)) {
			t.Errorf("docs/%s is missing", want)
		}
	}
	link := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	code := regexp.MustCompile("`[^`\n]*`") // Markdown makes no link inside a code span: bucket[16](user_id)
	for _, f := range docs {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, f)
		if bytes.Contains(data, []byte("../shared")) || bytes.Contains(data, []byte("/work/")) {
			t.Errorf("%s refers to files outside the repository", rel)
		}
		for _, m := range link.FindAllSubmatch(code.ReplaceAll(data, nil), -1) {
			target := string(m[1])
			if strings.HasPrefix(target, "#") || strings.HasPrefix(target, "http://") || strings.HasPrefix(target, "https://") {
				continue
			}
			target, _, _ = strings.Cut(target, "#")
			abs := filepath.Join(filepath.Dir(f), target)
			if r, err := filepath.Rel(root, abs); err != nil || strings.HasPrefix(r, "..") {
				t.Errorf("%s links to %s, outside the repository", rel, m[1])
				continue
			}
			if _, err := os.Stat(abs); err != nil {
				t.Errorf("%s links to %s, which does not exist", rel, m[1])
			}
		}
	}
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(readme, []byte("```sh\ngo run ./cmd/pqsink demo\n./scripts/test.sh\n```")) {
		t.Error("README.md does not start with the two commands, go run ./cmd/pqsink demo and ./scripts/test.sh")
	}
}
