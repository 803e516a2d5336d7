#!/usr/bin/env bash
# Bundles CNI plugin binaries with every shared library they load, and the dynamic loader, so
# that they run on any Linux host regardless of its own libraries (the kubelet's runtime execs
# CNI plugins in the host's mount namespace). install-cni.sh puts the bundle next to the host's
# CNI binaries and writes one small launcher per plugin.
#   images/bundle-cni.sh DEST BINARY...     ->  DEST/bin/<binary>, DEST/lib/<libs + loader>,
#                                               DEST/interp (the loader's file name),
#                                               DEST/static/<binary> for a static binary
# Our plugins are linked fully static in the product build (agent/cni/static_link.bzl): they
# are copied as they are and run without the loader.
set -euo pipefail

if (($# < 2)); then
  echo "usage: $0 DEST BINARY..." >&2
  exit 2
fi
dest=$1
shift
mkdir -p "$dest/bin" "$dest/lib" "$dest/static"

interp=""
for bin in "$@"; do
  install -m 0755 "$bin" "$dest/bin/$(basename "$bin")"
  # (Read whole first: with pipefail, `readelf | grep -q` fails when grep exits early and readelf
  # gets SIGPIPE, which would call a dynamic binary static.)
  headers=$(readelf -l "$bin" 2>/dev/null || true)
  if ! grep -q 'Requesting program interpreter' <<<"$headers"; then
    touch "$dest/static/$(basename "$bin")"  # no loader, no libraries
    continue
  fi
  out=$(ldd "$bin")
  if grep -q 'not found' <<<"$out"; then
    echo "bundle-cni: $bin: missing libraries:" >&2
    grep 'not found' <<<"$out" >&2
    exit 1
  fi
  while read -r name path; do
    # Copy the file, named as the binary asks for it (the soname), not as its symlink target.
    install -m 0644 "$(readlink -f "$path")" "$dest/lib/$name"
  done < <(awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}' <<<"$out")
  loader=$(awk '$1 ~ /^\// {print $1}' <<<"$out")
  if [[ -z $loader ]]; then
    echo "bundle-cni: $bin: ldd names no loader" >&2
    exit 1
  fi
  if [[ -n $interp && $interp != "$(basename "$loader")" ]]; then
    echo "bundle-cni: binaries use different loaders ($interp, $loader)" >&2
    exit 1
  fi
  interp=$(basename "$loader")
  install -m 0755 "$(readlink -f "$loader")" "$dest/lib/$interp"
done
echo "$interp" >"$dest/interp"
