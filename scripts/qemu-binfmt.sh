#!/usr/bin/env bash
# Lets this machine run programs of another CPU (`qemu-binfmt.sh arm64`):
# Debian's qemu-user-static, registered with the kernel's binfmt_misc (its
# file system mounted if it is not) with the F flag, so that the kernel
# opens the interpreter now and a chroot or a container (which has no
# /usr/bin/qemu-*-static of its own) runs the CPU's programs too.  Debian
# registers it through systemd-binfmt, which a machine without systemd as
# its init never runs.  Needs root; does nothing when already registered.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
arch=${1:?usage: qemu-binfmt.sh arm64}
case $arch in
    arm64) cpu=aarch64 ;;
    *) echo "qemu-binfmt: arm64 only, not \"$arch\"" >&2; exit 2 ;;
esac
bin=/proc/sys/fs/binfmt_misc
# arch-test: mmdebstrap asks it whether the CPU's programs run
command -v arch-test >/dev/null && [ -e "$bin/qemu-$cpu" ] && exit 0
[ "$(id -u)" = 0 ] || { echo "qemu-binfmt: needs root" >&2; exit 1; }
[ -x /usr/bin/qemu-$cpu-static ] && command -v arch-test >/dev/null \
    || DEBIAN_FRONTEND=noninteractive apt-get install -y -q qemu-user-static arch-test >&2
[ ! -e "$bin/qemu-$cpu" ] || exit 0
[ -e "$bin/register" ] || mount -t binfmt_misc binfmt_misc "$bin" \
    || { echo "qemu-binfmt: cannot mount binfmt_misc on $bin" >&2; exit 1; }
# Debian's magic and mask for the CPU, with the interpreter itself (not its
# -P wrapper: F opens it once, with no argv[0] to preserve)
conf=/usr/lib/binfmt.d/qemu-$cpu.conf
IFS=: read -r _ name type offset magic mask _ _ < "$conf"
printf ':%s:%s:%s:%s:%s:%s:F' "$name" "$type" "$offset" "$magic" "$mask" \
    "/usr/bin/qemu-$cpu-static" > "$bin/register"
echo "qemu-binfmt: $cpu programs run by /usr/bin/qemu-$cpu-static" >&2
