#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# The differential run, inside one VM boot: the raw-ABI harnesses run once
# with ucma_rs loaded and once with the C rdma_ucm, each appending what every
# case saw (return value and errno, pass bit, reply bytes with ids
# normalised; see tests/abi/ktap.h) to a log; the two logs are compared case
# by case. Differences named in tests/vm/differential-explained (each also
# listed in Documentation/abi.rst) are explained; any other fails the suite.
# Needs ucma_rs loaded on entry (scripts/vm-run --module rust); leaves it
# loaded on exit. Prints KTAP and "differential: N cases, M differences,
# K explained".
set -u
export LC_ALL=C
here=$(cd "$(dirname "$0")" && pwd)
build=$here/../build
explained_file=$here/differential-explained
work=$(mktemp -d)
harnesses=(ucma_abi ucma_cmds ucma_abi_rs)

echo "KTAP version 1"
echo "1..2"
if ! grep -q '^ucma_rs ' /proc/modules; then
	echo "ok 1 differential_runs # SKIP needs ucma_rs loaded"
	echo "ok 2 differential_no_unexplained # SKIP needs ucma_rs loaded"
	exit 0
fi

run_harnesses() { # $1 tag
	local h
	for h in "${harnesses[@]}"; do
		[ -x "$build/$h" ] || continue
		UCMA_OBSERVE=$work/$1.obs "$build/$h" >"$work/$1-$h.ktap" 2>&1
		echo "# $1: $h: $(tail -n 1 "$work/$1-$h.ktap")"
	done
}
unload() { # $1 module
	local i
	for i in $(seq 50); do
		grep -q "^$1 " /proc/modules || return 0
		rmmod "$1" 2>/dev/null && return 0
		sleep 0.1
	done
	return 1
}

ok=1
run_harnesses rust
unload ucma_rs || ok=0
# guest-init keeps modprobe from loading rdma_ucm behind our back.
modprobe --ignore-install rdma_ucm || ok=0
echo "ucma-rs: uCMA module loaded: c" >/dev/kmsg
[ -c /dev/infiniband/rdma_cm ] || ok=0
run_harnesses c
unload rdma_ucm || ok=0
insmod "$here/../../ucma_rs.ko" || ok=0
echo "ucma-rs: uCMA module loaded: rust" >/dev/kmsg
if [ $ok = 1 ] && [ -s "$work/rust.obs" ] && [ -s "$work/c.obs" ]; then
	echo "ok 1 differential_runs"
else
	echo "not ok 1 differential_runs # module swap or harness run failed"
fi

# One key per observation: case, kind, and its occurrence number.
keyed() {
	awk '{ k = $1 " " $2; n[k]++; v = $0; sub(/^[^ ]+ [^ ]+ ?/, "", v); print k " #" n[k] "\t" v }' "$1" |
		sort
}
keyed "$work/rust.obs" >"$work/rust.keyed"
keyed "$work/c.obs" >"$work/c.keyed"
cases=$(cut -d' ' -f1 "$work/rust.keyed" "$work/c.keyed" | sort -u | wc -l)
differing=$(join -t $'\t' -a1 -a2 -e MISSING -o 0,1.2,2.2 "$work/rust.keyed" "$work/c.keyed" |
	awk -F'\t' '$2 != $3 { split($1, a, " "); print a[1] }' | sort -u)
diffs=0 explained=0 unexplained=0
for c in $differing; do
	diffs=$((diffs + 1))
	if grep -q "^$c " "$explained_file" 2>/dev/null; then
		explained=$((explained + 1))
		echo "# explained difference: $c: $(grep "^$c " "$explained_file" | cut -d' ' -f2-)"
	else
		unexplained=$((unexplained + 1))
		echo "# DIFFERENCE in $c:"
		grep "^$c " "$work/rust.obs" | sed 's/^/#   ucma_rs:  /'
		grep "^$c " "$work/c.obs" | sed 's/^/#   rdma_ucm: /'
	fi
done
if [ $unexplained = 0 ] && [ "$cases" -gt 0 ]; then
	echo "ok 2 differential_no_unexplained"
else
	echo "not ok 2 differential_no_unexplained # $unexplained unexplained of $cases cases"
fi
echo "differential: $cases cases, $diffs differences, $explained explained"
rm -rf "$work"
[ $ok = 1 ] && [ $unexplained = 0 ]
