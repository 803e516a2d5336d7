#!/usr/bin/env bash
# Prints the Debian packages that provide the shared libraries the given ELF binaries load
# (as ldd resolves them on this system), one per line, sorted. The image build installs exactly
# these into debian:bookworm-slim, so the runtime list can never drift from what was linked.
# A statically linked binary (the IPAM-only spiderpool-agent) needs none. Fails when a library
# is missing or belongs to no package.
#   images/runtime-packages.sh BINARY...
set -euo pipefail

if (($# == 0)); then
  echo "usage: $0 BINARY..." >&2
  exit 2
fi

libs=$(
  for bin in "$@"; do
    if out=$(ldd "$bin" 2>&1); then
      :
    elif grep -q 'not a dynamic executable' <<<"$out"; then
      continue  # static: loads no shared library
    else
      echo "runtime-packages: ldd $bin failed: $out" >&2
      exit 1
    fi
    if grep -q 'not found' <<<"$out"; then
      echo "runtime-packages: $bin: missing libraries:" >&2
      grep 'not found' <<<"$out" >&2
      exit 1
    fi
    # "libfoo.so.1 => /lib/x86_64-linux-gnu/libfoo.so.1 (0x...)" and the loader line
    # "/lib64/ld-linux-x86-64.so.2 (0x...)"; linux-vdso has no file.
    awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\// {print $1}' <<<"$out"
  done | sort -u
)

owner() {  # the package owning a file, trying the usrmerge aliases of its path
  local f=$1 cand pkg
  for cand in "$f" "$(readlink -f "$f")" "/usr$f" "${f#/usr}"; do
    [[ -n $cand ]] || continue
    pkg=$(dpkg-query -S "$cand" 2>/dev/null | grep -v '^diversion' | head -n1 | sed 's/: .*//') || true
    if [[ -n $pkg ]]; then
      echo "$pkg"
      return 0
    fi
  done
  return 1
}

for lib in $libs; do
  owner "$lib" || { echo "runtime-packages: no package owns $lib" >&2; exit 1; }
done | sort -u
