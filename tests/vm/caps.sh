#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# VM tier: the per-file caps of ucma_rs (tests/limits/ucma_limits.c caps).
# Reloads ucma_rs with small caps, runs the cases, then reloads it with
# its defaults; needs no other rdma_cm file open. Under the C module the
# cases are skipped (ucma_limits sees no limits), and nothing is reloaded.
case ${1:-} in -h | --help) sed -n '2,/^[^#]/{/SPDX/d;/^#/s/^# \{0,1\}//p}' "$0"; exit 0 ;; esac
set -u
here=$(cd "$(dirname "$0")" && pwd)
bin=$here/../build/ucma_limits
# LISTEN's backlog is clamped to it; the fuzz suite leaves it random.
sysctl -qw net.rdma_ucm.max_backlog=1024
[ "${UCMA_MODULE:-}" = rust ] || exec "$bin" caps
reload() { # the module's parameters
	local i
	for i in $(seq 50); do
		rmmod ucma_rs 2>/dev/null && break
		sleep 0.1
	done
	# shellcheck disable=SC2068 # each parameter is a word
	insmod "$UCMA_KO" $@ || { echo "Bail out! insmod $UCMA_KO $*"; exit 1; }
	sysctl -qw net.rdma_ucm.max_backlog=1024
}
reload max_ids_per_file=64 max_events_per_file=32
"$bin" caps
rc=$?
reload
exit $rc
