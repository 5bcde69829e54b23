#!/usr/bin/env bash
# podman with the project's configuration: `scripts/podman.sh ARGS...` runs
# `podman ARGS...` with CONTAINERS_CONF and CONTAINERS_STORAGE_CONF naming
# files under build/podman, so the machine's own configuration
# (/etc/containers, ~/.config/containers) is never changed, and the images
# and containers it makes live in build/podman/storage.
#
# What the configuration says, and why:
# - runtime runc (Debian's): crun refuses hybrid cgroups (v1 controllers
#   and a v2 mount), which machines of this kind have;
# - default_ulimits = []: podman's default asks for more open files than the
#   machine's hard limit (20,000 here), and runc then refuses to start;
# - cgroupfs, and a file for the events: no systemd to ask.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
dir=$top/build/podman
command -v podman >/dev/null && command -v runc >/dev/null \
    || "$top/scripts/install-deps.sh" roots >&2

# the run root short and on /run: it holds sockets, whose paths are short
run=/run/nginx-jvm-podman-$(printf '%s' "$top" | md5sum | cut -c1-8)
mkdir -p "$dir/storage" "$run"
conf=$dir/containers.conf
cat > "$conf.new" <<EOF
[containers]
default_ulimits = []

[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
events_logfile_path = "$dir/events.log"
EOF
cmp -s "$conf.new" "$conf" && rm -f "$conf.new" || mv -f "$conf.new" "$conf"
storage=$dir/storage.conf
cat > "$storage.new" <<EOF
[storage]
driver = "overlay"
graphroot = "$dir/storage"
runroot = "$run"
EOF
cmp -s "$storage.new" "$storage" && rm -f "$storage.new" || mv -f "$storage.new" "$storage"

export CONTAINERS_CONF=$conf CONTAINERS_STORAGE_CONF=$storage
exec podman "$@"
