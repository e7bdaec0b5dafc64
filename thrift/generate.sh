#!/usr/bin/env bash
# Regenerates crates/percolator-thrift/src/hbase.rs from thrift/hbase.thrift with Apache Thrift 0.17
# (Debian: apt-get install thrift-compiler). `--check` compares instead of writing, so CI can
# prove the committed bindings match the IDL.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
command -v thrift >/dev/null || { echo "thrift compiler not installed (apt-get install thrift-compiler)" >&2; exit 3; }
version=$(thrift --version | awk '{print $3}')
case "$version" in 0.17.*) ;; *) echo "expected thrift 0.17.x, found $version" >&2; exit 3;; esac
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
thrift -out "$out" --gen rs "$here/hbase.thrift"
if [ "${1:-}" = "--check" ]; then
  if ! diff -q "$out/hbase.rs" "$root/crates/percolator-thrift/src/hbase.rs" >/dev/null; then
    echo "crates/percolator-thrift/src/hbase.rs is out of date with thrift/hbase.thrift: run thrift/generate.sh" >&2
    exit 1
  fi
  echo "thrift bindings in sync"
else
  cp "$out/hbase.rs" "$root/crates/percolator-thrift/src/hbase.rs"
  echo "wrote crates/percolator-thrift/src/hbase.rs"
fi
