#!/usr/bin/env bash
# ompi-run.sh ARGS...: Open MPI's mpirun across the rig (scripts/rig/rig.sh
# up N first). mpirun stays on the host; it starts each node's orted through
# rig-agent, and both the runtime's channel (oob) and MPI's TCP traffic (btl)
# are kept on the rig's subnet, so orteds reach mpirun back at the bridge's
# address. Pass -H/--host and the program as usual:
#   scripts/rig/ompi-run.sh -H node1:2,node2:2 ./prog
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
net=${GOMPIX_RIG_NET:-10.77.0}
exec mpirun --allow-run-as-root \
	--mca plm_rsh_agent "$here/rig-agent" \
	--mca oob_tcp_if_include "$net.0/24" \
	--mca btl_tcp_if_include "$net.0/24" \
	"$@"
