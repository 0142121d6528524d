#!/bin/sh
# Give the Assay sandbox a cgroup v2 subtree of its own inside a Kubernetes container.
#
# A container sees its own cgroup as /sys/fs/cgroup (private cgroup namespace), mounted
# read-only unless the container is privileged. The sandbox creates one cgroup per run
# (memory, pids and CPU limits, killed as a whole), so it needs that subtree writable, and
# cgroup v2 only lets a cgroup hand controllers to children once no process sits in it.
# So: remount read-write (CAP_SYS_ADMIN; the cgroup namespace confines it to this
# container's subtree), move every process of the container into a leaf "ray", and
# enable the controllers for the children. The sandbox then works under /sys/fs/cgroup/assay.
set -eu
CG=/sys/fs/cgroup
if [ ! -f "$CG/cgroup.controllers" ]; then
    echo "assay: $CG is not cgroup v2; the sandbox needs a cgroup v2 node" >&2
    exit 1
fi
if ! touch "$CG/.assay-rw" 2>/dev/null; then
    mount -o remount,rw "$CG"
fi
rm -f "$CG/.assay-rw"
mkdir -p "$CG/ray"
for pid in $(cat "$CG/cgroup.procs"); do
    echo "$pid" > "$CG/ray/cgroup.procs" 2>/dev/null || true
done
echo "+memory +pids +cpu" > "$CG/cgroup.subtree_control"
