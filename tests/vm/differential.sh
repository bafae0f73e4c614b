#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# The differential run, inside one VM boot: the raw-ABI harnesses run once
# with ucma_rs loaded and once with the C rdma_ucm, each appending what every
# case saw (return value and errno, pass bit, reply bytes with ids
# normalised; see tests/lib/ktap.h) to a log; the two logs are compared case
# by case. Differences named in tests/vm/differential-explained (each also
# listed in Documentation/abi.rst) are explained; any other fails the suite.
# Needs ucma_rs loaded on entry (scripts/vm-run --module rust); leaves it
# loaded on exit. Every harness must exist, exit 0 and print exactly the
# number of cases tests/vm/differential-expected gives it, in both runs:
# otherwise the environment is broken and the run fails, whatever the
# comparison says. Prints KTAP and "differential: R reply images and F
# free-form observations compared; N cases in all (S success paths; ...),
# M differences, K explained": R counts the cases that logged reply bytes,
# F the observations of another kind than rc, pass and reply (the two that
# can differ while each harness passes); the other cases log return values
# and verdicts that each harness asserts against its expectation in both
# runs, so they are equal whenever both runs pass. S counts the cases that
# logged a successful return or reply bytes.
case ${1:-} in -h | --help) sed -n '2,/^[^#]/{/SPDX/d;/^#/s/^# \{0,1\}//p}' "$0"; exit 0 ;; esac
set -u
export LC_ALL=C
here=$(cd "$(dirname "$0")" && pwd)
build=$here/../build
explained_file=$here/differential-explained
work=$(mktemp -d)
harnesses=(ucma_abi ucma_cmds ucma_diff ucma_abi_rs)
expected_file=$here/differential-expected

echo "KTAP version 1"
echo "1..2"
if ! grep -q '^ucma_rs ' /proc/modules; then
	echo "ok 1 differential_runs # SKIP needs ucma_rs loaded"
	echo "ok 2 differential_no_unexplained # SKIP needs ucma_rs loaded"
	exit 0
fi

# Runs every harness; returns 1 if one is missing, exits non-zero or prints
# another number of cases than expected.
run_harnesses() { # $1 tag
	local h rc n want t0 ms bad=0
	for h in "${harnesses[@]}"; do
		if [ ! -x "$build/$h" ]; then
			echo "# $1: $h: missing ($build/$h)"
			bad=1
			continue
		fi
		t0=$(date +%s%N)
		UCMA_OBSERVE=$work/$1.obs "$build/$h" >"$work/$1-$h.ktap" 2>&1
		rc=$?
		ms=$((($(date +%s%N) - t0) / 1000000))
		# Its cases: results with no subtest of their own (a C suite's
		# groups are results whose subtest holds their cases).
		n=$("$here/ktap-verdict" --cases "$work/$1-$h.ktap")
		want=$(awk -v h="$h" '$1 == h { print $2 }' "$expected_file" 2>/dev/null)
		echo "# $1: $h: exit $rc, $n cases, $ms ms: $(tail -n 1 "$work/$1-$h.ktap")"
		grep -E '^ *not ok |^Bail out' "$work/$1-$h.ktap" | sed "s/^ */#   $1: $h: /"
		if [ "$rc" != 0 ]; then
			echo "# $1: $h exited $rc"
			bad=1
		fi
		if [ "$n" != "${want:-none}" ]; then
			echo "# $1: $h printed $n cases, expected ${want:-(not in $expected_file)}"
			bad=1
		fi
	done
	return $bad
}
# Loads ucma_rs and marks the load in the kernel log (the harnesses count
# log lines since the last mark).
load_ucma_rs() {
	insmod "$UCMA_KO" || return 1
	echo "ucma-rs: uCMA module loaded: rust" >/dev/kmsg
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
# Each run starts from a freshly loaded module, as the C run does, so that
# what a module keeps per load (a message it logs once, the ids it has
# handed out) is the same for both, whatever the suites before did.
unload ucma_rs || ok=0
load_ucma_rs || ok=0
run_harnesses rust || ok=0
unload ucma_rs || ok=0
# guest-init keeps modprobe from loading rdma_ucm behind our back.
modprobe --ignore-install rdma_ucm || ok=0
echo "ucma-rs: uCMA module loaded: c" >/dev/kmsg
[ -c /dev/infiniband/rdma_cm ] || ok=0
run_harnesses c || ok=0
unload rdma_ucm || ok=0
load_ucma_rs || ok=0
if [ $ok = 1 ] && [ -s "$work/rust.obs" ] && [ -s "$work/c.obs" ]; then
	echo "ok 1 differential_runs"
else
	echo "not ok 1 differential_runs # module swap failed, or a harness was missing, failed or printed too few cases"
fi

# One key per observation: case, kind, and its occurrence number.
keyed() {
	awk '{ k = $1 " " $2; n[k]++; v = $0; sub(/^[^ ]+ [^ ]+ ?/, "", v); print k " #" n[k] "\t" v }' "$1" |
		sort
}
keyed "$work/rust.obs" >"$work/rust.keyed"
keyed "$work/c.obs" >"$work/c.keyed"
cases=$(cut -d' ' -f1 "$work/rust.keyed" "$work/c.keyed" | sort -u | wc -l)
success=$(awk '($2 == "rc" && $3 == 0) || $2 == "reply" { print $1 }' "$work/rust.obs" "$work/c.obs" |
	sort -u | wc -l)
replies=$(awk '$2 == "reply" { print $1 }' "$work/rust.obs" "$work/c.obs" | sort -u | wc -l)
# Observations of any other kind than rc, pass and reply (free-form lines).
free=$(awk '$2 != "rc" && $2 != "pass" && $2 != "reply" { print $1 " " $2 }' "$work/rust.obs" \
	"$work/c.obs" | sort -u | wc -l)
join -t $'\t' -a1 -a2 -e MISSING -o 0,1.2,2.2 "$work/rust.keyed" "$work/c.keyed" >"$work/joined"
differing=$(awk -F'\t' '$2 != $3 { split($1, a, " "); print a[1] }' "$work/joined" | sort -u)
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
		# Where two reply images part: the first differing byte.
		awk -F'\t' -v c="$c" '{ split($1, k, " ") }
			k[1] == c && k[2] == "reply" && $2 != $3 && $2 ~ /^[0-9a-f]+$/ && $3 ~ /^[0-9a-f]+$/ {
				for (i = 1; substr($2, i, 2) == substr($3, i, 2); i += 2)
					;
				printf "#   %s %s: first difference at byte %d: ucma_rs %s, rdma_ucm %s\n", k[2], k[3],
					(i - 1) / 2, substr($2, i, 2), substr($3, i, 2)
			}' "$work/joined"
	fi
done
if [ $ok = 1 ] && [ $unexplained = 0 ] && [ "$cases" -gt 0 ]; then
	echo "ok 2 differential_no_unexplained"
elif [ $unexplained = 0 ]; then
	echo "not ok 2 differential_no_unexplained # the runs were incomplete (see differential_runs): $cases cases compared prove nothing"
else
	echo "not ok 2 differential_no_unexplained # $unexplained unexplained of $cases cases"
fi
echo "differential: $replies reply images and $free free-form observations compared; $cases cases in all ($success success paths; the others log errnos and verdicts each run asserts by itself), $diffs differences, $explained explained"
rm -rf "$work"
[ $ok = 1 ] && [ $unexplained = 0 ]
