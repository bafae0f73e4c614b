#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# VM tier, two hosts (scripts/vm-run --pair): the real librdmacm tools with
# the server on one guest and the client on the other, across the virtual
# wires, as KTAP. Runs on ucma-a and starts each side with
# "tests/vm/pair-agent on GUEST CMD"; each client first waits until its
# server listens (pair-agent wait-listen, on the server's guest). rping
# (-V) over rxe and siw, IPv4 and IPv6; cmtime over both; rstream,
# ucmatose, udaddy (UD) and mckey (IPv4 multicast) over rxe. Cases are named
# NAME_server_G, G the server's guest. Then no cm id may be left on either
# guest. Retries as in clients.sh (tests/vm/client-pairs.sh).
#
# Usage: pair.sh [FILTER]   (only cases whose name contains FILTER)
# PAIR_SERVERS: the guests that take the server's side in turn, "a", "b"
# or "a b"; by default "a b" when the two guests run different modules
# (each direction of a mixed pair), else "a".
case ${1:-} in -h | --help) sed -n '2,/^[^#]/{/SPDX/d;/^#/s/^# \{0,1\}//p}' "$0"; exit 0 ;; esac
set -u
filter=${1:-}
logdir=${CLIENT_LOGS:-/tmp/ucma-pair}
mkdir -p "$logdir"
agent=$(cd "$(dirname "$0")" && pwd)/pair-agent
[ -n "${PAIR_ROLE:-}" ] || { echo "Bail out! not in a vm-run --pair guest"; exit 1; }
if [ "$UCMA_MODULE" = "$UCMA_PEER_MODULE" ]; then
	servers=${PAIR_SERVERS:-a}
else
	servers=${PAIR_SERVERS:-a b}
fi
if [ "${UCMA_KERNEL:-default}" = debug ]; then
	pings=5 conns=2 msgs=5 times=10 xfers=10
else
	pings=20 conns=4 msgs=10 times=50 xfers=20
fi
start_delay=0
. "$(dirname "$0")/client-pairs.sh"

module_of() { # $1 guest
	if [ "$1" = "$PAIR_ROLE" ]; then echo "$UCMA_MODULE"; else echo "$UCMA_PEER_MODULE"; fi
}
ip_of() { # $1 guest $2 rxe|siw $3 4|6
	local v=${2^^}_IP
	[ "$3" = 6 ] && v=${v}6
	[ "$1" = "$PAIR_ROLE" ] || v=PEER_$v
	echo "${!v}"
}

for S in $servers; do
	if [ "$S" = a ]; then C=b; else C=a; fi
	on_s="$agent on $S" on_c="$agent on $C"
	# The client starts once its server listens.
	ready="$on_s $agent wait-listen -p"
	for t in rxe siw; do
		for v in 4 6; do
			sip=$(ip_of $S $t $v) cip=$(ip_of $C $t $v)
			tag=${t}_ipv${v}_server_$S
			next_port
			add "rping_$tag" "$on_s rping -s -a $sip -p $port -C $pings -V" \
				"$ready $port && $on_c rping -c -a $sip -p $port -C $pings -V"
			[ $v = 4 ] || continue
			next_port
			add "cmtime_${times}_$tag" "$on_s cmtime -b $sip -p $port" \
				"$ready $port && $on_c cmtime -s $sip -b $cip -p $port -c $times" forever
			# The rest over rxe only: over siw between two guests the
			# ucmatose client often ends with CONNECT_ERROR -22, and
			# rstream's with "rpoll: Invalid argument", whichever module
			# (Documentation/clients.rst, "Two hosts").
			[ $t = rxe ] || continue
			next_port
			add "rstream_$tag" "$on_s rstream -b $sip -p $port -S 4096 -C $xfers -I 10 -T v" \
				"$ready $port && $on_c rstream -s $sip -p $port -S 4096 -C $xfers -I 10 -T v"
			next_port
			add "ucmatose_$tag" "$on_s ucmatose -b $sip -p $port -c $conns -C $msgs -S 1024" \
				"$ready $port && $on_c ucmatose -s $sip -p $port -c $conns -C $msgs -S 1024"
			# udaddy has no port option: its port is 7174.
			add "udaddy_$tag" "$on_s udaddy -b $sip -c $conns -C $msgs -S 512" \
				"$on_s $agent wait-listen 7174 && $on_c udaddy -s $sip -c $conns -C $msgs -S 512"
			# The receiver on the server's guest, the sender on the
			# client's; the sender starts once the receiver has
			# attached to the group (its output comes back here), and
			# repeats (at most 5 times) until the receiver has its 10.
			grp=239.2.1.$((port % 200 + 1))
			log=$logdir/mckey_$tag.server
			add "mckey_$tag" "$on_s stdbuf -oL mckey -m $grp -b $sip -C 10" \
				"for i in \$(seq 150); do grep -q 'receiving data' $log && break; sleep 0.2; done; for i in 1 2 3 4 5; do $on_c mckey -m $grp -b $cip -s -C 50 || exit 1; sleep 1; grep -q 'data transfers complete' $log && exit 0; done; exit 1"
		done
	done
done

for S in $servers; do
	echo "# ucma-$S runs the servers of the cases *_server_$S ($(module_of $S)), the other guest their clients"
done
run_cases 2
probe_retried
sleep 1
no_cm_id_left no_cm_id_left_a "$agent on a rdma resource show cm_id"
no_cm_id_left no_cm_id_left_b "$agent on b rdma resource show cm_id"
summary
