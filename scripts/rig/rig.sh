#!/usr/bin/env bash
# rig.sh: a multi-node test rig on one machine. Each "node" (node1..nodeN) is
# a set of long-lived namespaces (network, UTS, IPC, mount) held open by a
# sleeping holder process: own hostname, own /dev/shm, own /etc/hosts, and an
# eth0 on a private bridge. A "righost" holder (UTS + mount, host network)
# gives host-side daemons the name righost at the bridge's address.
#
#   rig.sh up N     bring up N nodes (tears down a previous rig first)
#   rig.sh down     remove everything the rig made (idempotent)
#   rig.sh status   print the nodes; exit 1 if the rig is not (fully) up
#   rig.sh env      print shell assignments describing the rig
#
# Overridable: GOMPIX_RIG_STATE (state dir), GOMPIX_RIG_BRIDGE (bridge name,
# at most 12 characters), GOMPIX_RIG_NET (first three octets of the /24).
set -euo pipefail

STATE=${GOMPIX_RIG_STATE:-/run/gompix-rig}
BRIDGE=${GOMPIX_RIG_BRIDGE:-gpxbr0}
NET=${GOMPIX_RIG_NET:-10.77.0}
HOSTADDR=$NET.254
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# The holder's argv[0] names the rig and node, so a crashed rig's holders are
# found even when its state dir is gone.
MARK="gompix-rig-holder:$STATE:"

die() { echo "rig.sh: $*" >&2; exit 1; }

check_names() {
	[ ${#BRIDGE} -le 12 ] || die "GOMPIX_RIG_BRIDGE '$BRIDGE' is longer than 12 characters"
	[[ $NET =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] || die "GOMPIX_RIG_NET '$NET' is not three octets (like 10.77.0)"
	[[ $STATE == /* ]] || die "GOMPIX_RIG_STATE '$STATE' is not an absolute path"
}

# holders prints "pid name" for every live holder of this rig.
holders() {
	ps -eo pid=,args= | awk -v m="$MARK" '{ if (index($2, m) == 1) print $1, substr($2, length(m) + 1) }'
}

# ns_table prints "pid namespace" for every process's mount and network
# namespace, in one pass.
ns_table() {
	# find fails on processes that end while it runs; what it printed stands.
	{ find /proc/[0-9]*/ns/mnt /proc/[0-9]*/ns/net -maxdepth 0 -printf '%p %l\n' 2>/dev/null || true; } |
		sed 's|^/proc/\([0-9]*\)/ns/[a-z]* |\1 |'
}

# kill_holders ends the holders and everything started inside their
# namespaces (daemons, agents' commands): the members of each holder's mount
# namespace, and for nodes also of its network namespace. TERM first, KILL
# after about two seconds.
kill_holders() {
	local hostnet targets pids i pid
	hostnet=$(readlink /proc/$$/ns/net)
	targets=$(for pid in "$@"; do
		readlink "/proc/$pid/ns/mnt"
		[ "$(readlink "/proc/$pid/ns/net")" = "$hostnet" ] || readlink "/proc/$pid/ns/net"
	done 2>/dev/null | sort -u)
	[ -n "$targets" ] || return 0
	for i in $(seq 30); do
		pids=$(ns_table | awk -v self=$$ 'NR == FNR { t[$1] = 1; next } $1 != self && ($2 in t) { print $1 }' \
			<(echo "$targets") - | sort -u)
		[ -n "$pids" ] || return 0
		# shellcheck disable=SC2086
		if [ "$i" -le 20 ]; then kill -TERM $pids 2>/dev/null || true; else kill -KILL $pids 2>/dev/null || true; fi
		sleep 0.1
	done
	echo "rig.sh: processes in the rig's namespaces survived KILL: $pids" >&2
	return 1
}

do_down() {
	local link
	# shellcheck disable=SC2046
	kill_holders $(holders | awk '{print $1}')
	for link in $(ip -o link show 2>/dev/null | awk -F': ' '{print $2}' | sed 's/@.*//'); do
		case $link in "$BRIDGE"h[0-9]*) ip link del "$link" 2>/dev/null || true ;; esac
	done
	if ip link show "$BRIDGE" >/dev/null 2>&1; then ip link del "$BRIDGE"; fi
	rm -rf "$STATE"
}

# start_holder NAME NSFLAGS... starts a holder in new namespaces and prints
# its pid once it runs inside them. It sits in /, so it pins no directory of
# its caller's.
start_holder() {
	local name=$1; shift
	local pidfile=$STATE/nodes/$name.pid i
	setsid unshare "$@" --propagation private \
		bash -c 'cd / && echo $$ >"$1.tmp" && mv "$1.tmp" "$1" && exec -a "$2" sleep infinity' \
		holder "$pidfile" "$MARK$name" </dev/null >/dev/null 2>&1 9>&- &
	for i in $(seq 100); do
		[ -s "$pidfile" ] && { cat "$pidfile"; return 0; }
		sleep 0.05
	done
	die "holder for $name did not start"
}

# node_fs gives a holder its hostname, a fresh /dev/shm and /var/tmp (a
# host's own scratch: Slurm's PMIx plugin keeps per-step directories there),
# and the rig's hosts. /tmp stays shared, so files put there reach every node.
node_fs() {
	local pid=$1 name=$2
	nsenter -t "$pid" -u hostname "$name"
	nsenter -t "$pid" -m sh -c '
		mount -t tmpfs -o mode=1777,nosuid,nodev tmpfs /dev/shm &&
		mount -t tmpfs -o mode=1777,nosuid,nodev tmpfs /var/tmp &&
		mount --bind "$1" /etc/hosts' rig "$STATE/hosts"
}

v6off() {
	local f=/proc/sys/net/ipv6/conf/$1/disable_ipv6
	if [ -w "$f" ]; then echo 1 >"$f"; fi
}

node_net() {
	local pid=$1 k=$2 out=${BRIDGE}h$2 in=${BRIDGE}n$2
	ip link add "$out" type veth peer name "$in"
	v6off "$out"
	ip link set "$out" master "$BRIDGE" up
	ip link set "$in" netns "$pid"
	# IPv4 only: no link-local IPv6 addresses for transports to wander onto.
	nsenter -t "$pid" -n sh -c "
		for f in /proc/sys/net/ipv6/conf/all/disable_ipv6 /proc/sys/net/ipv6/conf/default/disable_ipv6; do
			[ -w \$f ] && echo 1 >\$f
		done
		ip link set lo up &&
		ip link set '$in' name eth0 &&
		ip addr add '$NET.$k/24' dev eth0 &&
		ip link set eth0 up"
}

check_subnet() {
	local clash
	clash=$(ip -o -4 addr show 2>/dev/null | awk -v n="$NET." -v b="$BRIDGE" '$2 != b && index($4, n) == 1 {print $2" "$4}')
	[ -z "$clash" ] || die "subnet $NET.0/24 is already in use here ($clash); set GOMPIX_RIG_NET"
}

do_up() {
	local n=$1 k pid
	[[ $n =~ ^[1-9][0-9]*$ ]] && [ "$n" -le 250 ] || die "up: N must be 1..250, got '$n'"
	[ "$(id -u)" = 0 ] || die "up: needs root (namespaces, bridge)"
	do_down
	check_subnet
	# A failed up leaves nothing behind (set -e ends the script here).
	trap 'echo "rig.sh: up failed; removing the partial rig" >&2; do_down' EXIT
	mkdir -p "$STATE/nodes"
	{
		echo "127.0.0.1 localhost"
		echo "$HOSTADDR righost"
		for k in $(seq "$n"); do echo "$NET.$k node$k"; done
	} >"$STATE/hosts"
	ip link add "$BRIDGE" type bridge
	v6off "$BRIDGE"
	ip addr add "$HOSTADDR/24" dev "$BRIDGE"
	ip link set "$BRIDGE" up
	pid=$(start_holder righost --uts --mount)
	node_fs "$pid" righost
	for k in $(seq "$n"); do
		pid=$(start_holder "node$k" --net --uts --ipc --mount)
		node_fs "$pid" "node$k"
		node_net "$pid" "$k"
		echo "node$k" >>"$STATE/nodes/list"
	done
	trap - EXIT
}

do_status() {
	local name pid ok=0
	[ -f "$STATE/nodes/list" ] || { echo "rig: down ($STATE)"; return 1; }
	echo "rig: state $STATE, bridge $BRIDGE $HOSTADDR/24"
	for name in righost $(cat "$STATE/nodes/list"); do
		pid=$(cat "$STATE/nodes/$name.pid" 2>/dev/null || true)
		if [ -n "$pid" ] && tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q "^$MARK$name "; then
			echo "$name pid $pid up"
		else
			echo "$name pid ${pid:-?} DEAD"; ok=1
		fi
	done
	ip link show "$BRIDGE" >/dev/null 2>&1 || { echo "bridge $BRIDGE missing"; ok=1; }
	return $ok
}

do_env() {
	[ -f "$STATE/nodes/list" ] || die "env: the rig is down"
	echo "GOMPIX_RIG_STATE=$STATE"
	echo "GOMPIX_RIG_BRIDGE=$BRIDGE"
	echo "GOMPIX_RIG_NET=$NET"
	echo "GOMPIX_RIG_SUBNET=$NET.0/24"
	echo "GOMPIX_RIG_HOSTADDR=$HOSTADDR"
	echo "GOMPIX_RIG_NODES='$(tr '\n' ' ' <"$STATE/nodes/list" | sed 's/ $//')'"
	echo "GOMPIX_RIG_AGENT=$HERE/rig-agent"
}

# locked runs a command under a lock on the state dir's parent, so
# concurrent ups and downs (parallel test binaries) do not interleave, and no
# lock file outlives the rig.
locked() {
	local parent
	parent=$(dirname "$STATE")
	mkdir -p "$parent"
	exec 9<"$parent"
	flock -w 60 9 || die "timed out waiting for the lock on $parent"
	"$@"
}

check_names
case ${1:-} in
up) [ $# = 2 ] || die "usage: rig.sh up N"; locked do_up "$2" ;;
down) locked do_down ;;
status) do_status ;;
env) do_env ;;
*) echo "usage: rig.sh up N | down | status | env" >&2; exit 2 ;;
esac
