#!/usr/bin/env bash
# Makes sure the Temporal *server* binaries of the cluster test lane (npm run test:cluster,
# docs/production.md, "A production-shaped Temporal") are available: temporal-server (go.temporal.io/server
# cmd/server), temporal-sql-tool (cmd/tools/sql) and the server's PostgreSQL schema files, all
# of one version, in .keel/bin (or $KEEL_BIN_DIR). Built with `go install` from the Go module
# proxy, as scripts/install-temporal.sh builds the CLI; a version bump (TEMPORAL_SERVER_VERSION)
# rebuilds, since each binary must answer --version with the wanted one. Prints the cache
# directory it settled on: <dir>/temporal-server, <dir>/temporal-sql-tool and
# <dir>/temporal-server-schema-<version>/postgresql/v12/{temporal,visibility}/versioned.
set -euo pipefail
cd "$(dirname "$0")/.."
SERVER_VERSION="${TEMPORAL_SERVER_VERSION:-v1.31.2}"
CACHE_DIR="${KEEL_BIN_DIR:-$PWD/.keel/bin}"
SERVER="$CACHE_DIR/temporal-server"
SQL_TOOL="$CACHE_DIR/temporal-sql-tool"
SCHEMA="$CACHE_DIR/temporal-server-schema-$SERVER_VERSION"
WANTED="${SERVER_VERSION#v}"

# `temporal-server --version` says "temporal version 1.31.2"; the sql tool "temporal-sql-tool version 1.31.2".
is_version() { [ -x "$1" ] && "$1" --version 2>/dev/null | grep -qx ".* version $WANTED"; }
cached() { is_version "$SERVER" && is_version "$SQL_TOOL" && [ -d "$SCHEMA/postgresql/v12/temporal/versioned" ]; }

if cached; then echo "$CACHE_DIR"; exit 0; fi
command -v go >/dev/null 2>&1 || { echo "keel: the cluster lane needs Go to build temporal-server $SERVER_VERSION (go install); none on PATH" >&2; exit 1; }

mkdir -p "$CACHE_DIR"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "keel: building temporal-server and temporal-sql-tool $SERVER_VERSION with go install (minutes once; cached in $CACHE_DIR)" >&2
start=$(date +%s)
GOBIN="$tmp" CGO_ENABLED=0 go install "go.temporal.io/server/cmd/server@$SERVER_VERSION" "go.temporal.io/server/cmd/tools/sql@$SERVER_VERSION" >&2
echo "keel: built temporal-server $SERVER_VERSION in $(( $(date +%s) - start ))s" >&2
# The schema files are in the module's source, which go install has just put in the module cache.
module_dir="$(go env GOMODCACHE)/go.temporal.io/server@$SERVER_VERSION"
[ -d "$module_dir/schema/postgresql/v12" ] || { echo "keel: no schema/postgresql/v12 in $module_dir" >&2; exit 1; }
rm -rf "$SCHEMA"
mkdir -p "$SCHEMA"
cp -R "$module_dir/schema/postgresql" "$SCHEMA/"
chmod -R u+w "$SCHEMA"
mv -f "$tmp/server" "$SERVER"
mv -f "$tmp/sql" "$SQL_TOOL"
cached || { echo "keel: the built binaries do not answer --version with $WANTED" >&2; exit 1; }
echo "$CACHE_DIR"
