#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# VM tier: the real librdmacm tools, server and client in one guest, over
# siw and rxe, IPv4 and IPv6, servers bound to the explicit address (KTAP).
# Runs against whichever uCMA module is loaded. A failed pair is retried
# once (soft-RDMA under TCG is occasionally flaky) and the retry reported:
# "ok N name # passed on retry", counted as retried, not passed.
#
# Usage: clients.sh [FILTER]   (only cases whose name contains FILTER)
case ${1:-} in -h | --help) sed -n '2,/^[^#]/{/SPDX/d;/^#/s/^# \{0,1\}//p}' "$0"; exit 0 ;; esac
set -u
filter=${1:-}
logdir=${CLIENT_LOGS:-/tmp/ucma-clients}
mkdir -p "$logdir"
# Iteration counts: the full ones, or a tenth to a fifth of them on the debug
# kernel (KASAN and lockdep under TCG), where the point is the oracles.
if [ "${UCMA_KERNEL:-default}" = debug ]; then
	pings=20 conns=4 msgs=5 times=50 xfers=20
else
	pings=100 conns=10 msgs=20 times=500 xfers=100
fi
. "$(dirname "$0")/client-pairs.sh"

transports="siw rxe"
# On the debug kernel, where the point is the oracles (KASAN, lockdep) and
# every client is ten times slower, IPv4 only: IPv6 runs on the others.
families="4 6"
if [ "${UCMA_KERNEL:-}" = debug ]; then
	families=4
	echo "# clients: IPv4 only on the debug kernel"
fi
for t in $transports; do
	for v in $families; do
		if [ $t = siw ]; then ip4=$SIW_IP ip6=$SIW_IP6; else ip4=$RXE_IP ip6=$RXE_IP6; fi
		if [ $v = 4 ]; then ip=$ip4 f=""; else ip=$ip6 f="-f ipv6"; fi
		tag=${t}_ipv$v
		next_port; add "rping_${tag}" "rping -s -a $ip -p $port -C $pings -V" "rping -c -a $ip -p $port -C $pings -V"
		next_port; add "ucmatose_${tag}" "ucmatose -b $ip -p $port -c $conns -C $msgs -S 1024" "ucmatose -s $ip -p $port -c $conns -C $msgs -S 1024"
		next_port; add "ucmatose_migrate_${tag}" "ucmatose -b $ip -p $port -c 4 -C 10 -m" "ucmatose -s $ip -p $port -c 4 -C 10 -m"
		# On the debug kernel siw runs the three above (iWARP's connect,
		# accept, disconnect and migrate); the rest take the same uCMA
		# paths as over rxe, where they run, and run over siw elsewhere.
		[ $t = siw ] && [ "${UCMA_KERNEL:-}" = debug ] && continue
		next_port; add "rdma_server_client_${tag}" "rdma_server -s $ip -p $port" "rdma_client -s $ip -p $port"
		next_port; add "cmtime_${times}_${tag}" "cmtime -b $ip -p $port" "cmtime -s $ip -b $ip -p $port -c $times" forever
		next_port; add "rstream_nonblocking_${tag}" "rstream $f -b $ip -p $port -S 4096 -C $xfers -I 10 -T v" "rstream $f -s $ip -p $port -S 4096 -C $xfers -I 10 -T v"
		next_port; add "rstream_blocking_${tag}" "rstream $f -b $ip -p $port -S 4096 -C $xfers -I 10 -T b -T v" "rstream $f -s $ip -p $port -S 4096 -C $xfers -I 10 -T b -T v"
		next_port; add "riostream_${tag}" "riostream $f -b $ip -p $port -S 4096 -C 10 -I 100 -T v" "riostream $f -s $ip -p $port -S 4096 -C 10 -I 100 -T v"
		if [ $t = rxe ]; then
			add "udaddy_${tag}" "udaddy -b $ip -c $conns -C $msgs -S 512" "udaddy -s $ip -c $conns -C $msgs -S 512"
		fi
		# IPv4 only, with either module: rdma_xserver has no bind option and
		# listens on the IPv4 wildcard; rdma_cm answers an IPv6 RoCE
		# multicast join with ENOTSUPP (524). See Documentation/clients.rst.
		if [ $t = rxe ] && [ $v = 4 ]; then
			next_port; add "rdma_xserver_xclient_${tag}" "rdma_xserver -c r -p $port" "rdma_xclient -s $ip -c r -p $port"
			grp=239.1.1.$((port % 200 + 1))
			# Datagrams sent before the receiver has attached its QP to
			# the group are lost: start the sender once it says so. The
			# first datagrams of a boot's first group are lost on the
			# way (with either module): the sender sends 5 times what
			# the receiver waits for.
			# Under KASAN even 100 may not be enough: the sender
			# repeats until the receiver reports its 20 (at most 5 times).
			add "mckey_${tag}" "stdbuf -oL mckey -m $grp -b $ip -C 20" \
				"for i in \$(seq 150); do grep -q 'receiving data' $logdir/mckey_${tag}.server && break; sleep 0.2; done; for i in 1 2 3 4 5; do mckey -m $grp -b $ip -s -C 100 || exit 1; sleep 1; grep -q 'data transfers complete' $logdir/mckey_${tag}.server && exit 0; done; exit 1"
		fi
	done
done

run_cases 1
probe_retried
sleep 1
no_cm_id_left no_cm_id_left "rdma resource show cm_id"
summary
