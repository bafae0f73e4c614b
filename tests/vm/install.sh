#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# VM tier (boot with --module none): ucma_rs installed the kbuild way and
# found by modprobe, as on a user's machine (KTAP).
#
# scripts/check prepares $MODROOT on the host: the kernel's own modules and
# ucma_rs from `make modules_install INSTALL_MOD_PATH=$MODROOT` (ucma_rs in
# updates/, depmod run), a copy of it after `make uninstall`
# ($UNINSTALLED_MODROOT), and, when dkms is there, the module that
# `dkms build/install` made in $DKMSROOT. Here that tree is bind-mounted
# over /lib/modules/<release>, the repository's modprobe.d files are put
# in /etc/modprobe.d, and the kernel's usermode modprobe is a wrapper that
# logs what the kernel asks for. Then:
#   - librdmacm (rping) looks up the rdma_cm device through netlink; ib_core
#     asks for "rdma-client-rdma_cm" and ucma_rs is what arrives: through
#     its own alias alone (rdma_ucm blacklisted), and with ucma-rs.conf
#     while both modules are installed;
#   - `modprobe rdma_ucm` (rdma-core's boot-time list) loads ucma_rs, and
#     `modprobe -r rdma_ucm` unloads it;
#   - with ucma_rs unloadable, or not installed at all, both end in the C
#     rdma_ucm (the fallback);
#   - with rdma-ucm.conf instead, the same lookup loads the C rdma_ucm.
case ${1:-} in -h | --help) sed -n '2,/^[^#]/{/SPDX/d;/^#/s/^# \{0,1\}//p}' "$0"; exit 0 ;; esac
set -u
n=0 fail=0 skip=0
retry_note=
res() { # $1 ok(0/1) $2 name $3... reason
	local ok=$1 name=$2
	shift 2
	n=$((n + 1))
	if [ "$ok" = 0 ]; then echo "ok $n $name$retry_note"; else echo "not ok $n $name # $*"; fail=$((fail + 1)); fi
	retry_note=
}
skip() { n=$((n + 1)) skip=$((skip + 1)); echo "ok $n $1 # SKIP $2"; }
loaded() { grep -q "^$1 " /proc/modules; }
modules_state() { echo "ucma_rs=$(loaded ucma_rs && echo in || echo out) rdma_ucm=$(loaded rdma_ucm && echo in || echo out)"; }
unload_ucma() {
	local i
	for i in $(seq 50); do
		loaded ucma_rs || loaded rdma_ucm || return 0
		rmmod ucma_rs 2>/dev/null
		rmmod rdma_ucm 2>/dev/null
		sleep 0.1
	done
	return 1
}
rping_ok() { # $1 address: rping_pair, retried once (soft RDMA under TCG is
	# occasionally flaky; the module checks around it are not retried)
	rping_pair "$1" && return 0
	echo "# rping over $1 failed once ($(tail -n 1 /tmp/install-rping-c.log)), retrying"
	retry_note=" # passed on retry"
	rping_pair "$1"
}
# One autoload case: rping (librdmacm's netlink lookup of the rdma_cm
# device is what makes ib_core ask modprobe) must pass, the kernel must
# have asked for the alias, and $2 must be the uCMA module loaded, not $3.
autoload_case() { # $1 case name $2 wanted module $3 the other
	local rc
	: >/tmp/modprobe-requests
	rping_ok "$SIW_IP"
	rc=$?
	[ $rc = 0 ] && loaded "$2" && ! loaded "$3" && grep -q 'rdma-client-rdma_cm' /tmp/modprobe-requests
	res $? "$1" "rping rc=$rc, $(modules_state), kernel asked: $(tr '\n' ';' </tmp/modprobe-requests)" \
		"client: $(tail -n 2 /tmp/install-rping-c.log | tr '\n' ' ') server: $(tail -n 2 /tmp/install-rping-s.log | tr '\n' ' ')"
}
rping_pair() { # $1 address: a short verified rping, both sides through librdmacm
	timeout 60 rping -s -a "$1" -C 3 -V >/tmp/install-rping-s.log 2>&1 &
	local srv=$! rc src i
	# The client starts once the server listens (rping's port, 7174): the
	# server's first open may wait for modprobe to load the uCMA module.
	for i in $(seq 150); do
		rdma resource show cm_id 2>/dev/null | grep -qE 'state LISTEN .*src-addr [^ ]*:7174( |$)' &&
			break
		kill -0 $srv 2>/dev/null || break
		sleep 0.2
	done
	timeout 60 rping -c -a "$1" -C 3 -V >/tmp/install-rping-c.log 2>&1
	rc=$?
	wait $srv
	src=$?
	[ $rc = 0 ] && [ $src = 0 ]
}

release=$(uname -r)
modroot=${MODROOT:-$UCMA_ROOT/tests/build/modroot}
tree=$modroot/lib/modules/$release
echo "KTAP version 1"
echo "1..13"

# 1. The installed tree: ucma_rs in updates/ (ucma_rs.ko, or .ko.xz and
# the like where the kernel compresses its modules), its alias in
# modules.alias.
ko=$(ls "$tree"/updates/ucma_rs.ko* 2>/dev/null | head -n 1)
ko=${ko:-$tree/updates/ucma_rs.ko}
[ -f "$ko" ] && grep -q '^alias rdma-client-rdma_cm ucma_rs$' "$tree/modules.alias" &&
	[ "$(modinfo -F version "$ko")" = "$(cat "$UCMA_ROOT/VERSION")" ]
res $? installed_in_updates_with_alias \
	"$(ls "$tree/updates" 2>&1 | tr '\n' ' ') alias: $(grep rdma_cm "$tree/modules.alias" 2>&1 | tr '\n' ' ')"

# The guest uses that tree and the repository's configuration from here on.
mount --bind "$tree" "/lib/modules/$release" || { echo "Bail out! cannot bind-mount $tree"; exit 1; }
rm -f /etc/modprobe.d/ucma-rs.conf /etc/modprobe.d/rdma-ucm.conf
wrapper=/tmp/modprobe-logged
cat >"$wrapper" <<EOF
#!/bin/sh
echo "\$*" >>/tmp/modprobe-requests
exec /sbin/modprobe "\$@"
EOF
chmod +x "$wrapper"
old_modprobe=$(cat /proc/sys/kernel/modprobe)
echo "$wrapper" >/proc/sys/kernel/modprobe
unload_ucma

# 2. ucma_rs's own alias: with rdma_ucm out of the way (as on a kernel
# without it), librdmacm's lookup of the rdma_cm device makes ib_core ask
# for rdma-client-rdma_cm, and that loads ucma_rs.
echo 'blacklist rdma_ucm' >/etc/modprobe.d/no-rdma-ucm.conf
autoload_case alias_alone_autoloads_ucma_rs ucma_rs rdma_ucm
dmesg | grep -q "ucma_rs: version $(cat "$UCMA_ROOT/VERSION"), serving /dev/infiniband/rdma_cm"
res $? load_message_names_version "$(dmesg | grep ucma_rs | tail -n 2 | tr '\n' ' ')"
rm -f /etc/modprobe.d/no-rdma-ucm.conf
unload_ucma

# 3. ucma-rs.conf, both modules installed: the alias names both, and the
# lookup ends in ucma_rs.
install -m 644 "$UCMA_ROOT/modprobe.d/ucma-rs.conf" /etc/modprobe.d/
autoload_case ucma_rs_conf_autoload_gives_ucma_rs ucma_rs rdma_ucm

# 4. Loading rdma_ucm by name, as rdma-core's boot-time list does.
unload_ucma
modprobe rdma_ucm
rc=$?
[ $rc = 0 ] && loaded ucma_rs && ! loaded rdma_ucm
res $? modprobe_rdma_ucm_gives_ucma_rs "modprobe rc=$rc, $(modules_state)"

# 4b. `modprobe -r rdma_ucm` (ucma-rs.conf's remove line) unloads ucma_rs.
modprobe -r rdma_ucm
rc=$?
[ $rc = 0 ] && ! loaded ucma_rs && ! loaded rdma_ucm
res $? modprobe_r_rdma_ucm_unloads_ucma_rs "modprobe -r rc=$rc, $(modules_state)"

# 4c. The switch cannot strand a host: with ucma_rs unloadable (an empty
# file bind-mounted over the installed ucma_rs.ko, as a module built for
# another kernel or refused by signing would be), `modprobe rdma_ucm` and
# librdmacm's lookup both end in the C rdma_ucm.
unload_ucma
mount --bind /dev/null "/lib/modules/$release/updates/${ko##*/}"
modprobe ucma_rs 2>/dev/null && loaded ucma_rs
broken=$?
modprobe rdma_ucm
rc=$?
[ $broken != 0 ] && [ $rc = 0 ] && loaded rdma_ucm && ! loaded ucma_rs
res $? fallback_modprobe_rdma_ucm_gives_rdma_ucm "ucma_rs refused: $([ $broken != 0 ] && echo yes || echo no), modprobe rc=$rc, $(modules_state)"
unload_ucma
autoload_case fallback_autoload_gives_rdma_ucm rdma_ucm ucma_rs
unload_ucma
umount "/lib/modules/$release/updates/${ko##*/}"

# 4d. ... and with ucma_rs not installed at all (ucma-rs.conf left behind;
# the tree `make uninstall` left on the host tier, depmod run there: the
# guest's depmod over a distribution's few thousand compressed modules
# takes minutes under TCG): the same two roads end in the C rdma_ucm.
un_tree=${UNINSTALLED_MODROOT:-$UCMA_ROOT/tests/build/modroot-uninstalled}/lib/modules/$release
mount --bind "$un_tree" "/lib/modules/$release"
made=$?
modinfo ucma_rs >/dev/null 2>&1
missing=$?
modprobe rdma_ucm
rc=$?
[ $made = 0 ] && [ $missing != 0 ] && [ $rc = 0 ] && loaded rdma_ucm && ! loaded ucma_rs
res $? not_installed_modprobe_rdma_ucm_gives_rdma_ucm "uninstalled tree mounted: $([ $made = 0 ] && echo yes || echo "no ($un_tree)")," \
	"ucma_rs missing: $([ $missing != 0 ] && echo yes || echo no), modprobe rc=$rc, $(modules_state)"
unload_ucma
autoload_case not_installed_autoload_gives_rdma_ucm rdma_ucm ucma_rs
unload_ucma
# (lazily: a usermode modprobe may still hold the tree for a moment)
[ $made = 0 ] && umount -l "/lib/modules/$release"

# 5. The switch back: rdma-ucm.conf, and the same lookup loads rdma_ucm.
unload_ucma
rm -f /etc/modprobe.d/ucma-rs.conf
install -m 644 "$UCMA_ROOT/modprobe.d/rdma-ucm.conf" /etc/modprobe.d/
autoload_case switch_back_autoloads_rdma_ucm rdma_ucm ucma_rs

# 6. ... and back again, by name, while rdma-ucm.conf is in place.
unload_ucma
modprobe ucma_rs && loaded ucma_rs && ! loaded rdma_ucm && rping_ok "$SIW_IP"
res $? explicit_modprobe_ucma_rs_still_works "$(modules_state)"
unload_ucma

# 7. The module that DKMS built and installed (host tier: dkms), loaded
# (installed, as root; else as dkms built it)
dkms_root=${DKMSROOT:-$UCMA_ROOT/tests/build/dkms}
dko=$(find "$dkms_root/install" "$dkms_root/tree" -name 'ucma_rs.ko*' -path "*$release*" 2>/dev/null | head -n 1)
if [ -z "$dko" ]; then
	skip dkms_module_loads "no module built by dkms for $release (see the host tier)"
else
	insmod "$dko" && loaded ucma_rs && rping_ok "$SIW_IP"
	res $? dkms_module_loads "$dko: $(modules_state)"
	unload_ucma
fi

echo "$old_modprobe" >/proc/sys/kernel/modprobe
umount -l "/lib/modules/$release"
echo "# $((n - fail - skip)) passed, $fail failed, $skip skipped"
[ $fail = 0 ]
