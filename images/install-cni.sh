#!/bin/sh
# The spiderpool-agent DaemonSet's init container: installs our CNI plugins — `spiderpool`
# (IPAM), `coordinator` and `ifacer`, every plugin type the NADs we generate name —
# (and, with INSTALL_EXTRA_PLUGINS=true, the bundled macvlan/ipvlan where the host has none)
# into the host's CNI bin directory.
#
# The binaries come with their libraries and loader (bundle-cni.sh) in a content-addressed
# directory `<cni bin>/spiderpool.d-<hash>/`; each plugin is a two-line launcher script that
# execs the bundled loader on the bundled binary. Launchers are replaced atomically (rename), so
# a runtime never execs a half-written plugin; bundles of earlier versions are removed after
# the switch.
#
# Environment: CNI_BIN_HOST_PATH  the directory on the host (written into the launchers)
#              CNI_BIN_MOUNT      where that directory is mounted in this container
#              INSTALL_EXTRA_PLUGINS  "true" to install macvlan/ipvlan where missing
#              SPIDERPOOL_CNI_BUNDLE  the bundle in this image (default /usr/lib/spiderpool/cni)
set -eu

host_dir=${CNI_BIN_HOST_PATH:-/opt/cni/bin}
mount_dir=${CNI_BIN_MOUNT:-/host/opt/cni/bin}
extra=${INSTALL_EXTRA_PLUGINS:-false}
src=${SPIDERPOOL_CNI_BUNDLE:-/usr/lib/spiderpool/cni}
marker="# installed by spiderpool-agent"

[ -d "$mount_dir" ] || { echo "install-cni: $mount_dir is not mounted" >&2; exit 1; }
interp=$(cat "$src/interp" 2>/dev/null || true)
hash=$(cd "$src" && find . -type f | LC_ALL=C sort | xargs sha256sum | sha256sum | cut -c1-12)
bundle="spiderpool.d-$hash"

if [ ! -f "$mount_dir/$bundle/.complete" ]; then
  rm -rf "$mount_dir/.$bundle.tmp"
  cp -R "$src" "$mount_dir/.$bundle.tmp"
  touch "$mount_dir/.$bundle.tmp/.complete"
  rm -rf "${mount_dir:?}/$bundle"
  mv "$mount_dir/.$bundle.tmp" "$mount_dir/$bundle"
fi

# install_launcher NAME: <cni bin>/NAME runs the bundled NAME.
install_launcher() {
  name=$1
  tmp="$mount_dir/.$name.tmp"
  d="$host_dir/$bundle"
  {
    echo "#!/bin/sh"
    echo "$marker ($bundle)"
    if [ -e "$src/static/$name" ]; then
      echo "exec \"$d/bin/$name\" \"\$@\""  # statically linked: no loader needed
    else
      echo "exec \"$d/lib/$interp\" --library-path \"$d/lib\" --argv0 \"\$0\" \"$d/bin/$name\" \"\$@\""
    fi
  } >"$tmp"
  chmod 0755 "$tmp"
  mv -f "$tmp" "$mount_dir/$name"
  echo "install-cni: $host_dir/$name -> $d/bin/$name"
}

for plugin in spiderpool coordinator ifacer; do
  install_launcher "$plugin"
done
for plugin in macvlan ipvlan; do
  [ -f "$src/bin/$plugin" ] || continue
  if [ -e "$mount_dir/$plugin" ] && ! grep -q "^$marker" "$mount_dir/$plugin" 2>/dev/null; then
    continue  # the host's own plugin: never replaced
  fi
  if [ "$extra" = "true" ] || [ -e "$mount_dir/$plugin" ]; then
    # New install when asked; our own launcher is kept pointing at the current bundle.
    install_launcher "$plugin"
  fi
done

# Bundles of other versions: nothing points at them any more.
for old in "$mount_dir"/spiderpool.d-*; do
  [ -d "$old" ] || continue
  [ "$(basename "$old")" = "$bundle" ] || rm -rf "$old"
done
echo "install-cni: done"
