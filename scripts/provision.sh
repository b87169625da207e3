#!/usr/bin/env bash
# Provision everything pqsink's tests need, idempotently:
#   - test/duckdb/node_modules: `npm ci` when missing or when package-lock.json
#     changed since the last install (a stamp inside node_modules records it);
#   - test/avsc/node_modules, the same way: avsc, the independent Avro
#     implementation that writes the container files of test/avro_*_test.go;
#   - test/hyparquet/node_modules, the same way: hyparquet, a pure-JavaScript
#     Parquet reader, in its current version and in the one icebird (a
#     JavaScript Iceberg reader) pins, which test/hyparquet_test.go reads
#     the writer's files with;
#   - test/azurite/node_modules, the same way: Azurite, the Azure Storage
#     emulator whose blob service the azblob:// store's tests start
#     (internal/testutil/azurite);
#   - a MinIO server binary in ${PQSINK_CACHE:-$HOME/.cache/pqsink}/bin/minio,
#     built from the version pinned in tools/minio/go.mod and rebuilt when that
#     pin changes (a stamp next to the binary records it);
#   - kcat (Debian's package), the independent librdkafka client of
#     test/sink_kcat_test.go, docker-compose (Debian's 1.29), which
#     test/deploy_test.go has validate docker-compose.yml, PostgreSQL
#     (Debian's postgresql), the SQL catalog server that package table's
#     tests start, and protoc with the well-known types (protobuf-compiler,
#     libprotobuf-dev), for the Protobuf tests: each installed with apt-get
#     when missing, as root or through sudo, after a line per package that
#     says what it is for.
# Caches live outside the repository (npm's ~/.npm, Go's module and build
# caches, PQSINK_CACHE), so a fresh clone provisions in seconds after the
# first run. The first MinIO build takes several minutes (about 9 on a
# 2-core machine) and fills Go's module cache with MinIO's dependencies.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cache=${PQSINK_CACHE:-$HOME/.cache/pqsink}

now_ms() { local us=${EPOCHREALTIME/[.,]/}; echo $((us / 1000)); }
step_start=0
step() { step_start=$(now_ms); printf 'provision: %s\n' "$*"; }
done_step() {
	local ms=$(($(now_ms) - step_start))
	printf 'provision:   done in %d.%01ds\n' $((ms / 1000)) $((ms % 1000 / 100))
}
die() { printf 'provision: error: %s\n' "$*" >&2; exit 1; }

command -v go >/dev/null || die "go is not installed (need Go 1.26.8 or later, as go.mod says)"
command -v node >/dev/null || die "node is not installed (need Node.js 20+ with npm)"
command -v npm >/dev/null || die "npm is not installed (need Node.js 20+ with npm)"

mkdir -p "$cache/bin"
# Two concurrent runs would race on the same outputs; take turns.
exec 9>"$cache/provision.lock"
flock 9

# --- DuckDB harness (npm) ----------------------------------------------------
duckdb_dir=$repo/test/duckdb
lock_sum=$(cat "$duckdb_dir/package-lock.json" <(node --version) | sha256sum | cut -d' ' -f1)
stamp=$duckdb_dir/node_modules/.pqsink-lock.sha256
if [[ -f $stamp && $(<"$stamp") == "$lock_sum" ]]; then
	echo "provision: test/duckdb/node_modules is up to date"
else
	step "npm ci in test/duckdb"
	(cd "$duckdb_dir" && npm ci --no-audit --no-fund --loglevel=error)
	echo "$lock_sum" >"$stamp"
	done_step
fi

# --- avsc harness (npm) ------------------------------------------------------
avsc_dir=$repo/test/avsc
avsc_sum=$(cat "$avsc_dir/package-lock.json" <(node --version) | sha256sum | cut -d' ' -f1)
avsc_stamp=$avsc_dir/node_modules/.pqsink-lock.sha256
if [[ -f $avsc_stamp && $(<"$avsc_stamp") == "$avsc_sum" ]]; then
	echo "provision: test/avsc/node_modules is up to date"
else
	step "npm ci in test/avsc"
	(cd "$avsc_dir" && npm ci --no-audit --no-fund --loglevel=error)
	echo "$avsc_sum" >"$avsc_stamp"
	done_step
fi

# --- hyparquet harness (npm) -------------------------------------------------
hyparquet_dir=$repo/test/hyparquet
hyparquet_sum=$(cat "$hyparquet_dir/package-lock.json" <(node --version) | sha256sum | cut -d' ' -f1)
hyparquet_stamp=$hyparquet_dir/node_modules/.pqsink-lock.sha256
if [[ -f $hyparquet_stamp && $(<"$hyparquet_stamp") == "$hyparquet_sum" ]]; then
	echo "provision: test/hyparquet/node_modules is up to date"
else
	step "npm ci in test/hyparquet"
	(cd "$hyparquet_dir" && npm ci --no-audit --no-fund --loglevel=error)
	echo "$hyparquet_sum" >"$hyparquet_stamp"
	done_step
fi

# --- Azurite harness (npm) ---------------------------------------------------
azurite_dir=$repo/test/azurite
azurite_sum=$(cat "$azurite_dir/package-lock.json" <(node --version) | sha256sum | cut -d' ' -f1)
azurite_stamp=$azurite_dir/node_modules/.pqsink-lock.sha256
if [[ -f $azurite_stamp && $(<"$azurite_stamp") == "$azurite_sum" ]]; then
	echo "provision: test/azurite/node_modules is up to date"
else
	step "npm ci in test/azurite"
	(cd "$azurite_dir" && npm ci --no-audit --no-fund --loglevel=error)
	echo "$azurite_sum" >"$azurite_stamp"
	done_step
fi

# --- MinIO (Go, separate module) ---------------------------------------------
minio_version=$(awk '$1 == "github.com/minio/minio" { print $2 }' "$repo/tools/minio/go.mod")
[[ -n $minio_version ]] || die "tools/minio/go.mod does not pin github.com/minio/minio"
minio_bin=$cache/bin/minio
minio_stamp=$cache/bin/minio.version
want_stamp="$minio_version $(go env GOVERSION) $(go env GOOS)/$(go env GOARCH)"
if [[ -x $minio_bin && -f $minio_stamp && $(<"$minio_stamp") == "$want_stamp" ]]; then
	echo "provision: $minio_bin is up to date ($minio_version)"
else
	step "building MinIO $minio_version from source into $minio_bin (the first time: about 9 minutes on 2 cores, and about 1 GB of Go modules of its own into $(go env GOMODCACHE))"
	tmp=$(mktemp "$cache/bin/minio.XXXXXX")
	trap 'rm -f "$tmp"' EXIT
	(cd "$repo/tools/minio" && go build -trimpath -o "$tmp" github.com/minio/minio)
	mv -f "$tmp" "$minio_bin"
	trap - EXIT
	echo "$want_stamp" >"$minio_stamp"
	done_step
fi

# --- Debian packages --------------------------------------------------------
# Each test tool that is missing is installed with apt-get, as root or
# through sudo. Before anything is installed, the script says which
# packages it installs, how, and why (one line each).
# debian_tools lines: COMMAND PACKAGE DIRS WHY. DIRS is a glob of folders
# searched beside PATH (PostgreSQL's programs are not on PATH), or "-".
debian_tools=(
	"kcat|kcat|-|the independent librdkafka client that produces and consumes in test/sink_kcat_test.go"
	"docker-compose|docker-compose|-|validates docker-compose.yml in test/deploy_test.go (nothing is started)"
	"initdb|postgresql|/usr/lib/postgresql/*/bin|the PostgreSQL server that package table's tests start for the SQL catalog"
	"protoc|protobuf-compiler|-|encodes and decodes the Protobuf tests' messages independently of Go's protobuf library"
)
found_in() { # found_in CMD DIRS: the path of CMD on PATH or in DIRS
	local cmd=$1 dirs=$2 d extra=""
	[[ $dirs == - ]] && dirs=""
	for d in $dirs; do extra+=":$d"; done
	(PATH="$PATH$extra" command -v "$cmd")
}
missing=() why=()
for line in "${debian_tools[@]}"; do
	IFS='|' read -r cmd pkg dirs reason <<<"$line"
	if where=$(found_in "$cmd" "$dirs"); then
		echo "provision: $cmd is installed ($where)"
	else
		missing+=("$pkg") why+=("$reason")
	fi
done
# libprotobuf-dev has the well-known types' .proto files
# (/usr/include/google/protobuf) that the Protobuf tests' schemas import.
if [[ ! -f /usr/include/google/protobuf/timestamp.proto ]]; then
	missing+=(libprotobuf-dev) why+=("the well-known types' .proto files (google/protobuf/timestamp.proto) that the Protobuf tests' schemas import")
fi
if ((${#missing[@]} > 0)); then
	command -v apt-get >/dev/null || die "missing test tools and no apt-get: install ${missing[*]} (Debian's names) by hand"
	if [[ $(id -u) == 0 ]]; then
		apt=(env DEBIAN_FRONTEND=noninteractive) how="apt-get, as root"
	elif command -v sudo >/dev/null; then
		apt=(sudo env DEBIAN_FRONTEND=noninteractive) how="sudo apt-get"
	else
		die "missing test tools, and installing them needs root or sudo: run 'apt-get install ${missing[*]}' as root"
	fi
	echo "provision: installing ${#missing[@]} Debian packages with $how:"
	for i in "${!missing[@]}"; do
		printf 'provision:   %s: %s\n' "${missing[i]}" "${why[i]}"
	done
	step "apt-get update and install ${missing[*]}"
	"${apt[@]}" apt-get update -qq
	"${apt[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
	for line in "${debian_tools[@]}"; do
		IFS='|' read -r cmd pkg dirs reason <<<"$line"
		dirs=${dirs#-}
		found_in "$cmd" "${dirs:--}" >/dev/null || die "apt-get installed $pkg, but $cmd is not on PATH${dirs:+ nor in $dirs}"
	done
	[[ -f /usr/include/google/protobuf/timestamp.proto ]] || die "apt-get installed libprotobuf-dev, but /usr/include/google/protobuf/timestamp.proto is missing"
	done_step
fi
