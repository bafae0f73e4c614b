#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# VM tier: rping (librdmacm, RC, verify) over siw and rxe, IPv4 (KTAP).
# Usage: rping.sh [COUNT]. A failed pair is retried once (soft-RDMA under
# TCG is occasionally flaky) and the retry is reported.
case ${1:-} in -h | --help) sed -n '2,/^[^#]/{/SPDX/d;/^#/s/^# \{0,1\}//p}' "$0"; exit 0 ;; esac
set -u
count=${1:-10}
n=0 fail=0 retried=0
rping_pair() { # $1 address
	timeout 60 rping -s -a "$1" -C "$count" -V >/tmp/rping-s.log 2>&1 &
	local srv=$!
	sleep 1
	timeout 60 rping -c -a "$1" -C "$count" -V >/tmp/rping-c.log 2>&1
	local rc=$?
	wait $srv
	local src=$?
	[ $rc = 0 ] && [ $src = 0 ]
}
run() { # $1 name $2 address
	n=$((n + 1))
	if rping_pair "$2"; then
		echo "ok $n $1"
	elif echo "# $1 failed once, retrying" && rping_pair "$2"; then
		echo "ok $n $1 # passed on retry"
		retried=$((retried + 1))
	else
		echo "not ok $n $1 # client: $(tail -n 2 /tmp/rping-c.log | tr '\n' ' ') server: $(tail -n 2 /tmp/rping-s.log | tr '\n' ' ')"
		fail=$((fail + 1))
	fi
}
echo "KTAP version 1"
echo "1..2"
run "rping_siw_${count}" "$SIW_IP"
run "rping_rxe_${count}" "$RXE_IP"
echo "# $((n - fail - retried)) passed, $fail failed, 0 skipped, $retried retried"
[ $fail = 0 ]
