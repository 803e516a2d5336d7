#!/usr/bin/env bash
# What can be checked of the images without a container engine (README command (2)):
#   1. runtime-packages.sh resolves every library of spiderpool-agent-dra to a Debian package
#      (the list the Dockerfile installs into bookworm-slim); spiderpool-agent (IPAM only) and
#      spiderpool-controller are static and need none;
#   2. bundle-cni.sh + install-cni.sh, as the agent image and its init container run them,
#      install our plugins (spiderpool, coordinator, ifacer) and macvlan into a scratch "host" CNI directory, twice
#      (the upgrade path), and the installed launchers answer CNI VERSION from there with an
#      empty environment (no LD_LIBRARY_PATH, no PATH);
#   3. the Dockerfile builds the targets this script built (no second recipe).
# The binaries are the default-configuration ones `bazel test //...` has built already.
set -euo pipefail
cd "$(dirname "$0")/.."

targets=(//agent:spiderpool-agent //agent/cni:spiderpool //agent/coordinator:coordinator
  //agent/ifacer:ifacer //operator:spiderpool-controller)
bazel build --symlink_prefix=/ --noshow_progress "${targets[@]}"
bin=$(bazel info --symlink_prefix=/ bazel-bin 2>/dev/null)

for t in "${targets[@]}"; do
  grep -q -- "${t}" images/Dockerfile || { echo "images: the Dockerfile does not build $t"; exit 1; }
done

for b in agent/spiderpool-agent operator/spiderpool-controller; do
  if ldd "$bin/$b" >/dev/null 2>&1; then
    echo "images: $b is not statically linked"
    exit 1
  fi
  [[ -z $(images/runtime-packages.sh "$bin/$b") ]] ||
    { echo "images: runtime-packages.sh lists packages for the static $b"; exit 1; }
  echo "images: $b is static (no packages)"
done
b=agent/spiderpool-agent-dra
pkgs=$(images/runtime-packages.sh "$bin/$b")
echo "images: $b needs: $(echo "$pkgs" | xargs)"
grep -q '^libc6' <<<"$pkgs" || { echo "images: $b: libc6 missing from its package list"; exit 1; }

work=$(mktemp -d /tmp/sp-images-XXXXXX)
trap 'rm -rf "$work"' EXIT
images/bundle-cni.sh "$work/image/usr/lib/spiderpool/cni" "$bin/agent/cni/spiderpool" \
  "$bin/agent/coordinator/coordinator" "$bin/agent/ifacer/ifacer" /usr/lib/cni/macvlan
mkdir -p "$work/host"
for round in 1 2; do
  SPIDERPOOL_CNI_BUNDLE=$work/image/usr/lib/spiderpool/cni CNI_BIN_HOST_PATH=$work/host \
    CNI_BIN_MOUNT=$work/host INSTALL_EXTRA_PLUGINS=true sh images/install-cni.sh >/dev/null
  for plugin in spiderpool coordinator ifacer macvlan; do
    # A here-string, not a pipe: a plugin that answers VERSION without reading stdin would
    # SIGPIPE the writer, and with pipefail that fails the check (exit 141, seen in CI).
    out=$(env -i CNI_COMMAND=VERSION "$work/host/$plugin" <<<'{"cniVersion":"0.4.0"}')
    [[ $out == *'"supportedVersions"'* ]] || { echo "images: launcher $plugin (round $round): $out"; exit 1; }
  done
  [[ $(find "$work/host" -maxdepth 1 -name 'spiderpool.d-*' | wc -l) -eq 1 ]] ||
    { echo "images: more than one bundle after install round $round"; exit 1; }
  # Round 2 = an upgrade: a changed bundle replaces the old one.
  echo "# round $round" >>"$work/image/usr/lib/spiderpool/cni/interp.note"
done
# A host plugin that is not ours is never replaced.
printf '#!/bin/sh\necho host-ipvlan\n' >"$work/host/ipvlan"
chmod +x "$work/host/ipvlan"
cp /usr/lib/cni/ipvlan "$work/image/usr/lib/spiderpool/cni/bin/ipvlan"
SPIDERPOOL_CNI_BUNDLE=$work/image/usr/lib/spiderpool/cni CNI_BIN_HOST_PATH=$work/host \
  CNI_BIN_MOUNT=$work/host INSTALL_EXTRA_PLUGINS=true sh images/install-cni.sh >/dev/null
[[ $("$work/host/ipvlan") == host-ipvlan ]] || { echo "images: install-cni replaced the host's ipvlan"; exit 1; }
echo "images: CNI bundle installs, upgrades and runs from a bare environment; host plugins kept"
