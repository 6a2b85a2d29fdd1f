#!/usr/bin/env bash
# gprof's test command, the one README.md gives and .ci/run calls: installs
# what the tests need, then runs them all, one package at a time (the
# sampling-accuracy tests want the CPUs).
#
#   ./test.sh                    install what is missing, run every test
#   ./test.sh -run TestX ./cmd/  arguments replace ./... as go test's
#
# Installing needs root and apt-get (Debian, Ubuntu). Otherwise it prints
# what to install and stops; GPROF_SKIP_INSTALL=1 skips the check, for a
# machine that has the same programs another way.
set -euo pipefail
cd "$(dirname "$0")"

# What the tests need, as Debian packages. This is the one list: add new
# needs here.
packages=(
  gcc g++ libc6-dev     # the tests build small C and C++ programs
  binutils              # readelf reads build IDs
  gdb                   # a second opinion on stacks and DWARF
  libc6-dbg             # libc's debug symbols name its static functions (start_thread...)
  perl xz-utils sqlite3 # real system programs the tests profile
  nodejs                # node runs its builtins from a second mapping of its executable
  clang llvm            # Mach-O objects (objfile/, gprof inspect, the macOS backend); llvm's readers check their identities
  gcc-mingw-w64-x86-64  # PE files with a CodeView record, as Windows toolchains write them
  wine64                # runs gprof.exe's suspend backend for real (e2e/wine_test.go)
  debuginfod            # elfutils' server names a stripped binary by build-id (e2e/remote_test.go)
)

if ! command -v go >/dev/null; then
  echo "test.sh: go is not installed: install Go $(sed -n 's/^go //p' go.mod) or newer (https://go.dev/dl/)" >&2
  exit 1
fi

if [ "${GPROF_SKIP_INSTALL:-}" != 1 ]; then
  if ! command -v dpkg-query >/dev/null || ! command -v apt-get >/dev/null; then
    echo "test.sh: no apt-get here to install the tests' needs: install the equivalents of" >&2
    echo "  ${packages[*]}" >&2
    echo "then run: GPROF_SKIP_INSTALL=1 ./test.sh" >&2
    exit 1
  fi
  missing=()
  for p in "${packages[@]}"; do
    if [ "$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null)" != installed ]; then
      missing+=("$p")
    fi
  done
  if [ ${#missing[@]} -gt 0 ]; then
    if [ "$(id -u)" != 0 ]; then
      echo "test.sh: the tests need packages that are not installed; as root, run" >&2
      echo "  apt-get update && apt-get install -y ${missing[*]}" >&2
      echo "then ./test.sh again (or run ./test.sh itself as root: it installs them)" >&2
      exit 1
    fi
    echo "test.sh: installing ${missing[*]}" >&2
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  fi
fi

# The OpenTelemetry Collector the OTLP tests run (e2e/otlp_test.go) is built
# from its own modules, which the first time means downloading and compiling
# some hundreds of packages (minutes): do that here, outside the tests' time
# limit, so that the tests' own build of it takes seconds. From a copy, as
# the tests build it: -mod=mod may add to its go.sum.
otelcol=$(mktemp -d)
cp testdata/otelcol/go.mod testdata/otelcol/go.sum testdata/otelcol/main.go "$otelcol"/
if ! (cd "$otelcol" && GOWORK=off GOFLAGS=-mod=mod CGO_ENABLED=0 go build -o /dev/null .); then
  echo "test.sh: could not build the test Collector (testdata/otelcol; it needs the Go module proxy): the OTLP tests will fail" >&2
fi
rm -rf "$otelcol"

if [ $# -eq 0 ]; then
  set -- ./...
fi
exec go test -p 1 -count=1 -timeout 30m "$@"
