#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# VM tier: the guest environment that scripts/vm-run promises (KTAP).
case ${1:-} in -h | --help) sed -n '2,/^[^#]/{/SPDX/d;/^#/s/^# \{0,1\}//p}' "$0"; exit 0 ;; esac
set -u
n=0 fail=0
skipped=0
res() { # $1 ok(0/1) $2 name $3 reason
	n=$((n + 1))
	if [ "$1" = 0 ]; then echo "ok $n $2"; else echo "not ok $n $2 # $3"; fail=$((fail + 1)); fi
}
skip() { # $1 name $2 reason
	n=$((n + 1)) skipped=$((skipped + 1))
	echo "ok $n $1 # SKIP $2"
}
echo "KTAP version 1"
echo "1..9"
# The kernel asked for: Debian's own (scripts/vm-run --kernel debian) is
# its release and its build says it is Debian's ("... Debian 7.3.4-1~bpo13+1
# (date)" in uname -v); the others are built here.
case ${UCMA_KERNEL:-default} in
debian) [ "$(uname -r)" = 7.3.4+deb13-amd64 ] && uname -v | grep -q ' Debian 7\.3\.4-' ;;
debug) uname -r | grep -q -- '-debug$' && ! uname -v | grep -q ' Debian ' ;;
*) ! uname -r | grep -qE -- '-debug$|\+deb' && ! uname -v | grep -q ' Debian ' ;;
esac
res $? "kernel_${UCMA_KERNEL:-default}" "uname -r $(uname -r), uname -v $(uname -v)"
links=$(rdma link show 2>&1)
echo "$links" | grep -q 'link rxe0/1 state ACTIVE'; res $? rxe0_active "$links"
# siw0 on every kernel: Debian builds no siw, and its guest loads the one
# scripts/debian-module built out of tree (scripts/guest-init).
echo "$links" | grep -q 'link siw0/1 state ACTIVE'; res $? siw0_active "$links"
[ -n "${RXE_IP:-}" ] && [ -n "${RXE_IP6:-}" ] && [ -n "${SIW_IP:-}" ] && [ -n "${SIW_IP6:-}" ]
res $? addresses_exported "RXE_IP=${RXE_IP:-} SIW_IP=${SIW_IP:-}"
others=$(ip -o link show | awk -F': ' '{print $2}' | sed 's/@.*//' | grep -vE '^(lo|veth[0-3])$')
[ -z "$others" ]; res $? no_outside_network "unexpected links: $others"
case ${UCMA_MODULE:-} in
rust) grep -q '^ucma_rs ' /proc/modules && ! grep -q '^rdma_ucm ' /proc/modules ;;
c) grep -q '^rdma_ucm ' /proc/modules && ! grep -q '^ucma_rs ' /proc/modules ;;
*) ! grep -qE '^(rdma_ucm|ucma_rs) ' /proc/modules ;;
esac
res $? "chosen_module_only_${UCMA_MODULE:-}" "$(grep -E '^(rdma_ucm|ucma_rs) ' /proc/modules)"
# The module that was not asked for cannot be auto-loaded.
if [ "${UCMA_MODULE:-}" = c ]; then
	modprobe ucma_rs 2>/dev/null; ! grep -q '^ucma_rs ' /proc/modules
else
	modprobe rdma_ucm 2>/dev/null; ! grep -q '^rdma_ucm ' /proc/modules
fi
res $? other_module_not_loadable "the other uCMA module loaded"
if [ "${UCMA_MODULE:-}" = c ]; then
	# ucma_rs refuses to load while the C module holds rdma_cm, and says why.
	out=$(insmod "$UCMA_KO" 2>&1)
	rc=$?
	[ $rc != 0 ] && dmesg | grep -q 'ucma_rs: the rdma_cm device is held by another module'
	res $? refuses_to_load_beside_rdma_ucm "insmod rc=$rc: $out"
elif [ "${UCMA_MODULE:-}" = rust ]; then
	# An open file pins the module.
	exec 3<>/dev/infiniband/rdma_cm
	rmmod ucma_rs 2>/dev/null
	rc=$?
	exec 3>&-
	[ $rc != 0 ] && grep -q '^ucma_rs ' /proc/modules
	res $? open_file_pins_module "rmmod with an open fd returned $rc"
else
	res 0 no_module_case_to_check
fi
# Which module serves /dev/infiniband/rdma_cm: only ucma_rs writes
# rdma_cm_ids lines in an rdma_cm file's fdinfo.
case ${UCMA_MODULE:-} in
rust | c)
	exec 3<>/dev/infiniband/rdma_cm
	ids=$(grep -c '^rdma_cm_ids:' /proc/self/fdinfo/3)
	exec 3>&-
	[ "$ids" = "$([ "$UCMA_MODULE" = rust ] && echo 1 || echo 0)" ]
	res $? "device_served_by_$UCMA_MODULE" "rdma_cm_ids lines in the fdinfo: $ids"
	;;
*)
	! [ -e /sys/class/misc/rdma_cm ]
	res $? device_absent "$(ls -l /sys/class/misc/rdma_cm 2>&1)"
	;;
esac
echo "# $((n - fail - skipped)) passed, $fail failed, $skipped skipped"
[ $fail = 0 ]
