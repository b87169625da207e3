#!/usr/bin/env bash
# The project's test command: provision the test tools, vet, then test.
#
#   ./scripts/test.sh                          # everything: go test ./...
#   ./scripts/test.sh ./objstore/... -run S3   # arguments go to `go test` as given
#
# Package patterns among the arguments (./..., github.com/pqsink/...) also
# narrow `go vet`; without any, both run on ./... .
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

echo "test: provisioning the test tools (scripts/provision.sh: npm packages, a MinIO build, and Debian packages it names before installing them)"
./scripts/provision.sh

pkgs=()
for arg in "$@"; do
	case $arg in
	. | ./* | ../* | github.com/pqsink/*) pkgs+=("$arg") ;;
	esac
done
args=("$@")
if ((${#pkgs[@]} == 0)); then
	pkgs=(./...)
	args+=(./...)
fi

echo "test: go vet ${pkgs[*]}"
go vet "${pkgs[@]}"

# The end-to-end package takes about 15 minutes on an idle 2-core machine
# and twice that on a busy one; CI allows 90 for everything.
echo "test: go test -count=1 -timeout 60m ${args[*]}"
exec go test -count=1 -timeout 60m "${args[@]}"
