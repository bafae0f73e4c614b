#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# VM tier: teardown paths with real tools (KTAP). Killed processes must
# leave no cm_id behind; the module must unload right after the last close
# while resolves are pending; deleting rxe0 under live connections must
# deliver DEVICE_REMOVAL, let `rdma link delete` return and the applications
# exit.
case ${1:-} in -h | --help) sed -n '2,/^[^#]/{/SPDX/d;/^#/s/^# \{0,1\}//p}' "$0"; exit 0 ;; esac
set -u
n=0 fail=0
res() { # $1 0=ok $2 name $3 reason
	n=$((n + 1))
	if [ "$1" = 0 ]; then echo "ok $n $2"; else echo "not ok $n $2 # $3"; fail=$((fail + 1)); fi
}
# The cm_ids rdma_cm lists, one a line; fails (and prints why) when the
# tool does: an empty listing from a broken tool must not read as "none".
cm_ids() {
	local out rc
	out=$(rdma resource show cm_id 2>&1)
	rc=$?
	if [ $rc != 0 ]; then
		echo "rdma resource show cm_id exited $rc: $out" | head -n 2 | tr '\n' ' '
		return 1
	fi
	[ -n "$out" ] && echo "$out"
	return 0
}
no_cm_ids() {
	local i out
	for i in $(seq 50); do
		out=$(cm_ids) || { echo "$out"; return 1; }
		[ -z "$out" ] && return 0
		sleep 0.2
	done
	echo "$out" | head -n 5 | tr '\n' ' '
	return 1
}
# connected_ids PORT: the ids rdma_cm lists as connected (state CONNECT)
# with PORT as their source or destination port: a connected rping pair
# is two, the client's id and the server's child. Waits up to 10 s for
# two; prints the count (-1 if the tool failed).
connected_ids() {
	local i out k=0
	for i in $(seq 50); do
		out=$(cm_ids) || { echo -1; return; }
		k=$(grep -cE "state CONNECT .*:$1( |\$)" <<<"$out")
		[ "$k" -ge 2 ] && break
		sleep 0.2
	done
	echo "$k"
}
# wait_listening PORT: until rdma_cm lists an id in state LISTEN on PORT
# (10 s at most); fails if none does or the tool fails.
wait_listening() {
	local i out
	for i in $(seq 50); do
		out=$(cm_ids) || return 1
		grep -qE "state LISTEN .*:$1( |\$)" <<<"$out" && return 0
		sleep 0.2
	done
	return 1
}
# start_pair IP PORT SERVER_FLAGS [LOG_PREFIX]: an endless rping pair,
# the client started once the server listens on PORT (up to 10 s, not a
# fixed delay: under load a server may take longer than any delay, and a
# client that finds no listener is refused and exits); sets srv and cli to
# their pids and conn to the number of connected ids on PORT (2 for a
# connected pair).
start_pair() {
	local out_s=/dev/null out_c=/dev/null
	[ -n "${4:-}" ] && out_s=$4-s.log out_c=$4-c.log
	rping -s -a "$1" -p "$2" $3 >"$out_s" 2>&1 &
	srv=$!
	wait_listening "$2"
	rping -c -a "$1" -p "$2" -C 0 >"$out_c" 2>&1 &
	cli=$!
	conn=$(connected_ids "$2")
}

echo "KTAP version 1"
echo "1..6"

# The tool the leftover checks read must work: it lists a listener that
# exists (rping -s on RXE_IP, port 7600) and, once it is gone, nothing.
rping -s -a "$RXE_IP" -p 7600 >/dev/null 2>&1 &
lsn=$!
seen=0
wait_listening 7600 && seen=1
kill -9 $lsn
wait $lsn 2>/dev/null
gone=$(no_cm_ids) && gone=ok
if [ $seen != 1 ] || [ "$gone" != ok ]; then
	echo "Bail out! rdma resource show cm_id: the listener on port 7600 listed $seen, after its kill: $gone"
	exit 1
fi
echo "# rdma resource show cm_id lists a known listener, and nothing once it is killed"

# A client killed with SIGKILL mid-stream: its file release destroys its
# ids. The pair must have been connected before the kill (both ids listed
# in state CONNECT): a pair that never connected leaves nothing to leak.
for t in siw rxe; do
	ip=$([ $t = siw ] && echo "$SIW_IP" || echo "$RXE_IP")
	start_pair "$ip" 7601 -P
	echo "# sigkill_$t: $conn connected ids on port 7601 before the kill (want 2)"
	kill -9 $cli
	wait $cli 2>/dev/null
	sleep 1
	kill -9 $srv
	wait $srv 2>/dev/null
	left=$(no_cm_ids)
	rc=$?
	[ $rc = 0 ] && [ "$conn" = 2 ]
	res $? "sigkill_client_and_server_leave_no_cm_id_$t" "$conn connected ids before the kill, want 2; $left"
done

# A server killed while connected (proven as above).
start_pair "$RXE_IP" 7602 "-C 0"
echo "# server_killed: $conn connected ids on port 7602 before the kill (want 2)"
kill -9 $srv
wait $srv 2>/dev/null
timeout 20 tail --pid=$cli -f /dev/null
gone=$?
kill -9 $cli 2>/dev/null
wait $cli 2>/dev/null
left=$(no_cm_ids)
rc=$?
[ $rc = 0 ] && [ "$conn" = 2 ]
res $? server_killed_while_connected_leaves_no_cm_id "$conn connected ids before the kill, want 2; client exit wait $gone; $left"

# rmmod right after the last close, with resolves pending: ucmatose
# clients resolving an address nobody answers (ARP times out after 2 s; a
# new address each round) and the rxe address (their handlers run
# meanwhile) are killed, and the module is removed at once. The release
# must have destroyed every id: a pending resolve whose handler outlived
# the module would run into its freed text within the 2.5 s waited before
# the reload. Then no splat, no cm_id, and the module loads again.
rmmod_case() {
	local mod=ucma_rs load="insmod $UCMA_KO" round far near why= splat
	if [ "${UCMA_MODULE:-}" = c ]; then
		mod=rdma_ucm load="modprobe --ignore-install rdma_ucm"
	fi
	echo "robustness: rmmod_after_last_close start" >/dev/kmsg
	for round in 1 2 3; do
		ucmatose -s 192.0.2.9$round -c 32 >/dev/null 2>&1 &
		far=$!
		ucmatose -s "$RXE_IP" -p 7604 -c 32 >/dev/null 2>&1 &
		near=$!
		sleep 0.5
		kill -9 $far $near
		wait $far $near 2>/dev/null
		rmmod $mod || { why="round $round: rmmod $mod failed"; break; }
		sleep 2.5
		$load || { why="round $round: $load failed"; break; }
		# A new load: what tests/lib/kmsg.h looks for (KMSG_MODULE_LOADED).
		echo "ucma-rs: uCMA module loaded: ${UCMA_MODULE:-rust}" >/dev/kmsg
		exec 3<>/dev/infiniband/rdma_cm || { why="round $round: no rdma_cm after reload"; break; }
		exec 3>&-
	done
	splat=$(dmesg | sed -n '/robustness: rmmod_after_last_close start/,$p' |
		grep -E 'BUG:|WARNING:|Oops|general protection|KASAN:|UBSAN:|Call Trace:' | head -n 3)
	[ -n "$splat" ] && why="${why:+$why; }splat: $splat"
	[ -z "$why" ] && { why=$(no_cm_ids) || why="cm_ids left: $why"; }
	[ -z "$why" ]
	res $? rmmod_right_after_last_close_with_resolves_pending "$why"
}
rmmod_case

# Device removal under live connections.
start_pair "$RXE_IP" 7603 "-C 0" /tmp/rm
sleep 1
timeout 30 rdma link delete rxe0
del=$?
res $del rdma_link_delete_returns "rdma link delete exited $del"
timeout 20 tail --pid=$srv -f /dev/null
s=$?
timeout 20 tail --pid=$cli -f /dev/null
c=$?
kill -9 $srv $cli 2>/dev/null
wait 2>/dev/null
# Each side ends on DEVICE_REMOVAL or, when its CQ reports the loss first,
# on the CQ error; at least one must have seen the event, and both exit.
cat /tmp/rm-s.log /tmp/rm-c.log | grep -q 'device removal' && [ $s = 0 ] && [ $c = 0 ]
res $? device_removal_seen_and_apps_exit "server wait $s client wait $c: $(tail -n 2 /tmp/rm-s.log | tr '\n' ' ') / $(tail -n 2 /tmp/rm-c.log | tr '\n' ' ')"
rdma link add rxe0 type rxe netdev veth0 2>/dev/null
echo "# $((n - fail)) passed, $fail failed, 0 skipped"
[ $fail = 0 ]
