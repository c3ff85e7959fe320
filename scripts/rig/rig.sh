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
	local p cmd
	for p in /proc/[0-9]*; do
		cmd=$({ tr '\0' ' ' <"$p/cmdline"; } 2>/dev/null) || continue
		case $cmd in "$MARK"*) cmd=${cmd#"$MARK"}; echo "${p#/proc/} ${cmd%% *}" ;; esac
	done
}

# ns_members prints every pid (but $$) whose namespace KIND is NSID.
ns_members() {
	local kind=$1 nsid=$2 p
	for p in /proc/[0-9]*; do
		[ "${p#/proc/}" = $$ ] && continue
		[ "$(readlink "$p/ns/$kind" 2>/dev/null)" = "$nsid" ] && echo "${p#/proc/}"
	done
	return 0
}

# kill_node ends a holder and everything started inside its namespaces
# (daemons, agents' commands): members of its mount namespace, and for nodes
# also of its network namespace.
kill_node() {
	local pid=$1 mnt net pids i
	mnt=$(readlink "/proc/$pid/ns/mnt" 2>/dev/null) || return 0
	net=$(readlink "/proc/$pid/ns/net" 2>/dev/null) || return 0
	[ "$net" = "$(readlink /proc/$$/ns/net)" ] && net=
	for i in 1 2 3 4 5 6 7 8 9 10 11; do
		pids=$( { ns_members mnt "$mnt"; [ -n "$net" ] && ns_members net "$net"; } | sort -u)
		[ -z "$pids" ] && return 0
		# shellcheck disable=SC2086
		if [ "$i" -lt 11 ]; then kill -TERM $pids 2>/dev/null || true; else kill -KILL $pids 2>/dev/null || true; fi
		sleep 0.2
	done
}

do_down() {
	local pid name link
	while read -r pid name; do
		[ -n "$pid" ] && kill_node "$pid"
	done < <(holders)
	for link in $(ip -o link show 2>/dev/null | awk -F': ' '{print $2}' | sed 's/@.*//'); do
		case $link in "$BRIDGE"h[0-9]*) ip link del "$link" 2>/dev/null || true ;; esac
	done
	if ip link show "$BRIDGE" >/dev/null 2>&1; then ip link del "$BRIDGE"; fi
	rm -rf "$STATE"
}

# start_holder NAME NSFLAGS... starts a holder in new namespaces and prints
# its pid once it runs inside them.
start_holder() {
	local name=$1; shift
	local pidfile=$STATE/nodes/$name.pid i
	setsid unshare "$@" --propagation private \
		bash -c 'echo $$ >"$1.tmp" && mv "$1.tmp" "$1" && exec -a "$2" sleep infinity' \
		holder "$pidfile" "$MARK$name" </dev/null >/dev/null 2>&1 9>&- &
	for i in $(seq 100); do
		[ -s "$pidfile" ] && { cat "$pidfile"; return 0; }
		sleep 0.05
	done
	die "holder for $name did not start"
}

# node_fs gives a holder its hostname, a fresh /dev/shm and the rig's hosts.
node_fs() {
	local pid=$1 name=$2
	nsenter -t "$pid" -u hostname "$name"
	nsenter -t "$pid" -m sh -c '
		mount -t tmpfs -o mode=1777,nosuid,nodev tmpfs /dev/shm &&
		mount --bind "$1" /etc/hosts' rig "$STATE/hosts"
}

node_net() {
	local pid=$1 k=$2 out=${BRIDGE}h$2 in=${BRIDGE}n$2
	ip link add "$out" type veth peer name "$in"
	ip link set "$out" master "$BRIDGE" up
	ip link set "$in" netns "$pid"
	nsenter -t "$pid" -n sh -c "
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
	mkdir -p "$STATE/nodes"
	{
		echo "127.0.0.1 localhost"
		echo "$HOSTADDR righost"
		for k in $(seq "$n"); do echo "$NET.$k node$k"; done
	} >"$STATE/hosts"
	ip link add "$BRIDGE" type bridge
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

# locked runs a command under the rig's lock, so concurrent ups and downs
# (parallel test binaries) do not interleave.
locked() {
	mkdir -p "$(dirname "$STATE")"
	exec 9>"$STATE.lock"
	flock -w 60 9 || die "timed out waiting for $STATE.lock"
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
