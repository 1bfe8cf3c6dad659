#!/usr/bin/env bash
# Print the path of a Go toolchain >= 1.25, installing one if the machine has none.
# The toolchain comes from the Go module proxy (golang.org/toolchain), as `go` itself does.
set -euo pipefail
want_minor=25
version="1.25.5"
cache="${POLICY_SCHEDULER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/policy-scheduler}"

usable() {  # $1: a go binary
  local v
  v=$("$1" env GOVERSION 2>/dev/null) || return 1
  v=${v#go}
  local major=${v%%.*} rest=${v#*.}
  local minor=${rest%%.*}
  [ "$major" -gt 1 ] || [ "$minor" -ge "$want_minor" ]
}

for cand in "$(command -v go 2>/dev/null || true)" /usr/local/go/bin/go "$cache/go/bin/go"; do
  if [ -n "$cand" ] && [ -x "$cand" ] && usable "$cand"; then
    dirname "$cand"
    exit 0
  fi
done

echo "ensure-go: no Go >= 1.$want_minor found; installing go$version from the Go module proxy" >&2
arch=$(uname -m); case "$arch" in x86_64) arch=amd64 ;; aarch64|arm64) arch=arm64 ;; esac
url="${GOPROXY_URL:-https://proxy.golang.org}/golang.org/toolchain/@v/v0.0.1-go${version}.linux-${arch}.zip"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if command -v curl >/dev/null; then curl -fsSL "$url" -o "$tmp/go.zip"; else
  python3 -c "import urllib.request,sys; urllib.request.urlretrieve(sys.argv[1], sys.argv[2])" "$url" "$tmp/go.zip"; fi
python3 - "$tmp/go.zip" "$tmp/x" <<'PY'
import sys, zipfile
zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])
PY
src=$(find "$tmp/x" -maxdepth 3 -type d -name "go${version}*" -o -maxdepth 3 -type f -path '*/bin/go' | head -n1)
root=$(dirname "$(dirname "$(find "$tmp/x" -type f -path '*/bin/go' | head -n1)")")
rm -rf "$cache/go"; mkdir -p "$cache"; mv "$root" "$cache/go"
chmod +x "$cache/go/bin/"* "$cache/go/pkg/tool/"*/* 2>/dev/null || true
usable "$cache/go/bin/go" || { echo "ensure-go: installed toolchain does not run" >&2; exit 1; }
echo "$cache/go/bin"
