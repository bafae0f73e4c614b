# SPDX-License-Identifier: GPL-2.0
#
# Sourced by the client suites (clients.sh: one guest; pair.sh: two guests):
# server/client pairs of real tools as KTAP cases. A failed pair is retried
# once on another port (soft-RDMA under TCG is occasionally flaky) and the
# retry reported: "ok N name # passed on retry", counted as retried, not
# passed. Expects $filter (only cases whose name contains it) and $logdir.
n=0 fail=0 retried=0 port=7500
# Seconds between starting a server and its client (pair.sh makes the
# client wait for the server instead).
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

run_pair() { # $1 name $2 server $3 client $4 forever
	local name=$1 srv_cmd=$2 cli_cmd=$3 forever=$4 srv rc src i
	timeout 120 bash -c "$srv_cmd" >"$logdir/$name.server" 2>&1 &
	srv=$!
	sleep "$start_delay"
	timeout 120 bash -c "$cli_cmd" >"$logdir/$name.client" 2>&1
	rc=$?
	if [ -n "$forever" ]; then
		kill "$srv" 2>/dev/null
		wait "$srv" 2>/dev/null
		src=0
	else
		# The server of a failed client may wait for it forever: it
		# gets 5 s to end by itself.
		if [ $rc != 0 ]; then
			for i in $(seq 50); do kill -0 "$srv" 2>/dev/null || break; sleep 0.1; done
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
		elif echo "# $name failed once, retrying on another port" && sleep 2 &&
			run_pair "$name" "${srv_cmd//-p /-p 1}" "${cli_cmd//-p /-p 1}" "$forever"; then
			echo "ok $n $name # passed on retry"
			retried=$((retried + 1))
		else
			echo "not ok $n $name # client: $(tail -n 3 "$logdir/$name.client" | tr '\n' ' ')| server: $(tail -n 3 "$logdir/$name.server" | tr '\n' ' ')"
			fail=$((fail + 1))
		fi
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
