# SPDX-License-Identifier: GPL-2.0
#
# Sourced by the client suites (clients.sh: one guest; pair.sh: two guests):
# server/client pairs of real tools as KTAP cases. A failed pair is retried
# once on another port (soft-RDMA under TCG is occasionally flaky; twice
# for a case listed in tests/vm/c-flakes, see known_flake) and the retry
# reported: "ok N name # passed on retry", counted as retried, not
# passed. A retry is no pass: under ucma_rs a case that passed on its retry
# runs PROBE_RUNS (3) more times at once, in the same boot, and reports
# "# retry-probe NAME: F of P runs failed"; scripts/check fails the run
# when a retry under ucma_rs reproduced there (F > 0) and the C module
# showed no such flake (scripts/retry-compare). To tell a shared flake
# from a ucma_rs-only fault, the C boot runs each case that was retried
# under ucma_rs (listed, one name a line, in
# $UCMA_ROOT/tests/build/clients-probe) PROBE_RUNS more times after its
# cases and reports the same line. Names are compared with their numbers
# as "N" (cmtime_500_... on the default kernel is cmtime_50_... on the
# debug kernel).
# Expects $filter (only cases whose name contains it) and $logdir.
n=0 fail=0 retried=0 port=7500
# A client starts once its server listens (an rdma_cm id in state LISTEN on
# the server's port, "rdma resource show cm_id"), or, for a server that
# listens on no port (mckey), start_delay seconds after it. pair.sh sets
# start_delay=0: its clients wait for their server themselves.
start_delay=${start_delay:-1.5}
declare -a names=() cases=()

# add NAME SERVER_CMD CLIENT_CMD [forever]: a server/client pair. A "forever"
# server is killed once the client is done; otherwise it must exit 0.
add() {
	case $1 in *"$filter"*) ;; *) return ;; esac
	names+=("$1")
	cases+=("$2"$'\n'"$3"$'\n'"${4:-}")
}

next_port() { port=$((port + 1)); }

# The port an rdma_cm id of server command $1 listens on: its "-p PORT",
# udaddy's default, or nothing (mckey joins a group and listens on none).
listen_port() {
	case $1 in
	*" -p "*) sed -n 's/.* -p \([0-9]*\).*/\1/p' <<<"$1" ;;
	udaddy*) echo 7174 ;;
	esac
}

# wait_listen PORT PID: until an id listens on PORT (30 s at most), or the
# server (PID) has exited.
wait_listen() {
	local i
	for i in $(seq 150); do
		rdma resource show cm_id 2>/dev/null | grep -qE "state LISTEN .*src-addr [^ ]*:$1( |$)" &&
			return 0
		kill -0 "$2" 2>/dev/null || return 1
		sleep 0.2
	done
	return 1
}

run_pair() { # $1 name $2 server $3 client $4 forever
	local name=$1 srv_cmd=$2 cli_cmd=$3 forever=$4 srv rc src i lport grace
	timeout 120 bash -c "$srv_cmd" >"$logdir/$name.server" 2>&1 &
	srv=$!
	lport=$(listen_port "$srv_cmd")
	if [ "$start_delay" = 0 ]; then
		:
	elif [ -n "$lport" ]; then
		wait_listen "$lport" "$srv" || echo "# $name: nothing listens on port $lport"
	else
		sleep "$start_delay"
	fi
	timeout 120 bash -c "$cli_cmd" >"$logdir/$name.client" 2>&1
	rc=$?
	if [ -n "$forever" ]; then
		kill "$srv" 2>/dev/null
		wait "$srv" 2>/dev/null
		src=0
	else
		# The server of a failed client may wait for it forever: it
		# gets 5 s to end by itself. Every server here ends within
		# seconds of a client that succeeded ("forever" ones are not
		# waited for), but one can hang then too (rdma_server over rxe,
		# for the ACK of its last send, which rxe retries without end:
		# see c-flakes): it gets 30 s, not the rest of its 120.
		grace=300
		[ $rc = 0 ] || grace=50
		for i in $(seq $grace); do kill -0 "$srv" 2>/dev/null || break; sleep 0.1; done
		if kill -0 "$srv" 2>/dev/null; then
			echo "# $name: the server still ran $((grace / 10)) s after its client (rc $rc) ended: killed"
			kill "$srv" 2>/dev/null
		fi
		wait "$srv"
		src=$?
	fi
	[ $rc = 0 ] && [ $src = 0 ] || {
		echo "# $name: client rc $rc, server rc $src"
		return 1
	}
}

# pair_tails NAME: the last lines of the client's and the server's output
# of case NAME, on one line.
pair_tails() {
	echo "client: $(tail -n 3 "$logdir/$1.client" | tr '\n' ' ')| server: $(tail -n 3 "$logdir/$1.server" | tr '\n' ' ')"
}

# run_cases EXTRA: the KTAP header, a plan of the cases added plus EXTRA
# cases the suite reports itself (case_result), then the cases. The retry
# moves every "-p PORT" of both commands to 1PORT.
run_cases() {
	local i name srv_cmd cli_cmd forever
	echo "KTAP version 1"
	echo "1..$((${#names[@]} + $1))"
	for i in "${!names[@]}"; do
		name=${names[$i]}
		IFS=$'\n' read -r -d '' srv_cmd cli_cmd forever <<<"${cases[$i]}"
		n=$((n + 1))
		if run_pair "$name" "$srv_cmd" "$cli_cmd" "$forever"; then
			echo "ok $n $name"
		elif echo "# $name failed once, retrying on another port; $(pair_tails "$name")" &&
			sleep 2 &&
			retry_pair "$name" "$srv_cmd" "$cli_cmd" "$forever"; then
			echo "ok $n $name # passed on retry"
			retried=$((retried + 1))
			[ "${UCMA_MODULE:-}" = c ] || probe_case "$name" "$srv_cmd" "$cli_cmd" "$forever"
		else
			echo "not ok $n $name # $(pair_tails "$name")"
			fail=$((fail + 1))
		fi
	done
}

# retry_pair NAME SERVER_CMD CLIENT_CMD FOREVER: the retry, on ports 1PORT,
# and for a known_flake one more on 2PORT.
retry_pair() {
	run_pair "$1" "${2//-p /-p 1}" "${3//-p /-p 1}" "$4" && return 0
	known_flake "$1" || return 1
	echo "# $1 failed twice, a known shared flake: retrying once more; $(pair_tails "$1")"
	run_pair "$1" "${2//-p /-p 2}" "${3//-p /-p 2}" "$4"
}

# known_flake NAME: the case is listed in tests/vm/c-flakes (seen to fail
# under the C module too, with the evidence named there). Such a case gets
# a second retry, on ports 2PORT: rstream over siw hangs in 2 to 4 runs in
# a hundred with either module, and CI once saw it hang twice in a row.
known_flake() {
	grep -q "^$(norm_name "$1") " "${UCMA_ROOT:-.}/tests/vm/c-flakes" 2>/dev/null
}

# A case name as scripts/retry-compare compares it: numbers as "N" (the
# same case on either kernel), pair.sh's _server_a/_server_b as _pair.
norm_name() { sed -E -e 's/_server_[ab]$/_pair/' -e 's/_[0-9]+(_|$)/_N\1/g' <<<"$1"; }

# probe_case NAME SERVER_CMD CLIENT_CMD FOREVER: the pair PROBE_RUNS (3)
# more times, on ports 3PORT, 4PORT, 5PORT; not a KTAP case but a
# "# retry-probe NAME: F of P runs failed" line that scripts/retry-compare
# reads.
probe_case() {
	local k f=0
	for k in $(seq "${PROBE_RUNS:-3}"); do
		run_pair "$1" "${2//-p /-p $((k + 2))}" "${3//-p /-p $((k + 2))}" "$4" >/dev/null ||
			f=$((f + 1))
	done
	echo "# retry-probe $1: $f of ${PROBE_RUNS:-3} runs failed"
}

# probe_retried: in the C boot, each case of this suite that was retried
# under ucma_rs (tests/build/clients-probe) is probed (probe_case).
probe_retried() {
	local list=${UCMA_ROOT:-.}/tests/build/clients-probe i name srv_cmd cli_cmd forever
	[ "${UCMA_MODULE:-}" = c ] && [ -s "$list" ] || return 0
	for i in "${!names[@]}"; do
		name=${names[$i]}
		grep -qxF "$(norm_name "$name")" "$list" || continue
		IFS=$'\n' read -r -d '' srv_cmd cli_cmd forever <<<"${cases[$i]}"
		probe_case "$name" "$srv_cmd" "$cli_cmd" "$forever"
	done
}

# no_cm_id_left NAME CMD: a case of its own, "ok" when CMD (which lists the
# cm ids of a guest) prints nothing: every id is gone once the tools exited.
no_cm_id_left() {
	local left
	n=$((n + 1))
	left=$(bash -c "$2" 2>&1)
	if [ -z "$left" ]; then
		echo "ok $n $1"
	else
		echo "not ok $n $1 # $(echo "$left" | head -n 5 | tr '\n' ' ')"
		fail=$((fail + 1))
	fi
}

# The summary line; the suite's exit status.
summary() {
	echo "# $((n - fail - retried)) passed, $fail failed, 0 skipped, $retried retried"
	[ $fail = 0 ]
}
