#!/usr/bin/env bash
# Makes (once) a Debian 13 "trixie" root for Stoker's second CI platform — g++ 14, libstdc++ 14,
# glibc 2.41, Python 3.13 — with debootstrap, and runs a command inside it with chroot.
#
#   scripts/trixie-root.sh ROOT              make ROOT if it is not complete yet
#   scripts/trixie-root.sh ROOT run CMD...   then run CMD (bash -c) inside, in /stoker
#
# The root is kept between local runs (a marker file says it is complete); a fresh clone builds
# it from nothing. The checkout's files (`git ls-files`: tracked and untracked, not ignored) are
# copied to ROOT/stoker before each run, so its .venv and build/ stay the root's own and the
# host's are never touched. No container runtime: plain chroot, as root, with /proc, /sys and
# /dev bound in for the run and unbound after.
set -euo pipefail

root=$(realpath -m "$1")
shift
repo=$(cd "$(dirname "$0")/.." && pwd)
marker="$root/.stoker-root-complete"
mirror=${TRIXIE_MIRROR:-http://deb.debian.org/debian}
# What the build and the tests need from Debian; the Python packages come from pip.
packages=(g++ make python3 python3-venv python3-dev zlib1g-dev libpng-dev libjpeg62-turbo-dev
          ca-certificates patchelf)

if [ ! -e "$marker" ]; then
  command -v debootstrap >/dev/null || apt-get install -y -qq debootstrap >/dev/null
  rm -rf "$root"
  mkdir -p "$root"
  start=$SECONDS
  debootstrap --variant=minbase trixie "$root" "$mirror" >"$root.debootstrap.log" 2>&1 \
    || { tail -30 "$root.debootstrap.log"; exit 1; }
  echo "trixie root: debootstrap $((SECONDS - start)) s"
  # This machine's CA certificates, so pip inside the root trusts what pip outside it trusts.
  cp /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/stoker-host-ca.crt" 2>/dev/null \
    || { mkdir -p "$root/etc/ssl/certs" && cp /etc/ssl/certs/ca-certificates.crt \
           "$root/etc/ssl/certs/stoker-host-ca.crt"; }
  cp /etc/resolv.conf "$root/etc/resolv.conf"
  start=$SECONDS
  chroot "$root" /usr/bin/env DEBIAN_FRONTEND=noninteractive bash -c \
    "apt-get update -qq && apt-get install -y -qq --no-install-recommends ${packages[*]} && apt-get clean" \
    >"$root.apt.log" 2>&1 || { tail -30 "$root.apt.log"; exit 1; }
  echo "trixie root: apt $((SECONDS - start)) s"
  touch "$marker"
fi

[ $# -eq 0 ] && exit 0
[ "$1" = run ] || { echo "usage: $0 ROOT [run CMD...]" >&2; exit 2; }
shift

# The checkout, as git sees it (no host .venv, no build folders), refreshed in place.
mkdir -p "$root/stoker"
(cd "$repo" && git ls-files -z -co --exclude-standard | tar --null -T - -cf -) \
  | tar -C "$root/stoker" -xf -
cp /etc/resolv.conf "$root/etc/resolv.conf"

mounted=()
cleanup() {
  for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do umount -l "${mounted[i]}" || true; done
}
trap cleanup EXIT
for fs in proc sys dev dev/pts; do
  mkdir -p "$root/$fs"
  mount --bind "/$fs" "$root/$fs"
  mounted+=("$root/$fs")
done
mkdir -p "$root/dev/shm"

chroot "$root" /usr/bin/env -i HOME=/root PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin \
  LANG=C.UTF-8 PIP_CERT=/etc/ssl/certs/stoker-host-ca.crt PIP_DISABLE_PIP_VERSION_CHECK=1 \
  PIP_DEFAULT_TIMEOUT=180 ${STOKER_JOBS:+JOBS=$STOKER_JOBS} \
  ${PIP_NO_CACHE_DIR:+PIP_NO_CACHE_DIR=$PIP_NO_CACHE_DIR} \
  bash -c "cd /stoker && $*"
