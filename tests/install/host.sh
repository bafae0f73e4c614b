#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Host tier: building and installing ucma_rs the ways a user's machine does
# (KTAP), against the cached kernel KDIR ($1), or (--debian) against
# Debian's own kernel: its headers tree (scripts/debian-kdir) and its
# module tree, with every build and install step run in the trixie root
# (Debian's make, gcc, rustc, depmod and dkms; root only), the module
# scripts/debian-module built installed from that build's copy of the
# tree. Leaves under tests/build:
#   modroot/  the kernel's modules (make modules_install; Debian's:
#             hard-linked from its unpacked package) and ucma_rs, the tree
#             tests/vm/install.sh mounts as /lib/modules in the guest;
#   modroot-uninstalled/  a copy of it after `make uninstall` (mounted
#             there for the cases without ucma_rs installed);
#   dkms/     dkms's own trees, with the module `dkms install` put there;
#   headers/  a headers-only copy of KDIR (what a headers package carries)
#             and the module built against it (Debian's kernel: its own
#             headers tree is one, and the module was built against it).
# Nothing is written outside the checkout: dkms runs with its trees moved
# into tests/build/dkms and without depmod on the host.
case ${1:-} in -h | --help) sed -n '2,/^[^#]/{/SPDX/d;/^#/s/^# \{0,1\}//p}' "$0"; exit 0 ;; esac
set -u
. "$(dirname "$0")/../../scripts/common.sh"
cd "$UCMA_ROOT" || exit 1
build=$UCMA_ROOT/tests/build
version=$(cat VERSION)
if [ "${1:-}" = --debian ]; then
	debian=1
	kdir=$(scripts/debian-kdir --print) || { echo "Bail out! no Debian kernel tree: run scripts/debian-kdir"; exit 1; }
	release=$(cat "$kdir/include/config/kernel.release")
	# Where scripts/debian-module built the module: a copy of the tree.
	src=$UCMA_CACHE/debian-module/src
	[ -f "$src/build/$release/ucma_rs.ko" ] ||
		{ echo "Bail out! no $src/build/$release/ucma_rs.ko: run scripts/debian-module"; exit 1; }
	kernel_modules=$(debian_kernel_dir)/usr/lib/modules/$release
	kmake() { in_trixie make "$@"; }
	in_root() { in_trixie "$@"; }
else
	debian=0
	kdir=$(readlink -f "${1:?usage: tests/install/host.sh KDIR | --debian}")
	release=$(cat "$kdir/include/config/kernel.release")
	src=$UCMA_ROOT
	mapfile -t kvars < <(kmake_vars)
	kmake() { make "$@"; }
	in_root() { "$@"; }
fi
n=0 fail=0 skip=0
# A clean copy of the sources into $1, as a release tarball holds them: the
# files git tracks, or, outside a git checkout, the tree without build output.
copy_sources() {
	mkdir -p "$1"
	if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
		git ls-files -z | tar --null -T - -cf - | tar -xf - -C "$1"
	else
		tar --exclude=./tests/build --exclude=./build --exclude=./ucma_core/target \
			--exclude='*.o' --exclude='*.ko' --exclude='.*.cmd' -cf - . | tar -xf - -C "$1"
	fi
}
res() { # $1 ok(0/1) $2 name $3 log file
	n=$((n + 1))
	if [ "$1" = 0 ]; then
		echo "ok $n $2"
	else
		echo "not ok $n $2 # see $3"
		tail -n 15 "$3" | sed 's/^/# /'
		fail=$((fail + 1))
	fi
}
echo "KTAP version 1"
echo "1..10"

# 1. make modules_install into a scratch root: the kernel's modules, then
# ucma_rs into updates/ (compressed, if the kernel's config says so), and
# depmod run (by kbuild, or, for a tree without System.map such as
# Debian's headers, by the Makefile).
log=$build/logs/modules_install.log
tree=$build/modroot/lib/modules/$release
rm -rf "$build/modroot"
{
	if [ $debian = 1 ]; then
		mkdir -p "$build/modroot/lib/modules" &&
			cp -al "$kernel_modules" "$build/modroot/lib/modules/"
	else
		make -C "$kdir" "${kvars[@]}" INSTALL_MOD_PATH="$build/modroot" modules_install
	fi &&
		kmake -C "$src" KDIR="$kdir" INSTALL_MOD_PATH="$build/modroot" modules_install
} >"$log" 2>&1
[ $? = 0 ] && ls "$tree"/updates/ucma_rs.ko* >/dev/null 2>&1 &&
	grep -q '^updates/ucma_rs\.ko[.a-z]*:.*rdma_cm\.ko' "$tree/modules.dep" &&
	grep -q '^alias rdma-client-rdma_cm ucma_rs$' "$tree/modules.alias"
res $? modules_install_into_updates "$log"
installed_ko=$(ls "$tree"/updates/ucma_rs.ko* 2>/dev/null | head -n 1)

# 2. The modprobe.d files install where INSTALL_MOD_PATH says.
log=$build/logs/provider.log
{
	make INSTALL_MOD_PATH="$build/modroot" provider-rdma-ucm &&
		make INSTALL_MOD_PATH="$build/modroot" provider-ucma-rs
} >"$log" 2>&1
[ $? = 0 ] && cmp -s modprobe.d/ucma-rs.conf "$build/modroot/etc/modprobe.d/ucma-rs.conf" &&
	[ ! -e "$build/modroot/etc/modprobe.d/rdma-ucm.conf" ]
res $? provider_conf_installs "$log"

# 2b. make uninstall, on a copy of that root (hard links: the VM tier boots
# with the original): the module and both modprobe.d files gone, depmod
# run, and the alias left to the C rdma_ucm. The copy is kept: the VM tier
# mounts it to show the host falls back to rdma_ucm once ucma_rs is
# uninstalled.
log=$build/logs/uninstall.log
un=$build/modroot-uninstalled
rm -rf "$un"
cp -al "$build/modroot" "$un"
kmake -C "$src" KDIR="$kdir" INSTALL_MOD_PATH="$un" uninstall >"$log" 2>&1
rc=$?
[ $rc = 0 ] && [ -z "$(ls "$un/lib/modules/$release/updates/" 2>/dev/null | grep ucma_rs)" ] &&
	! grep -q ucma_rs "$un/lib/modules/$release/modules.dep" &&
	grep -q '^alias rdma-client-rdma_cm rdma_ucm$' "$un/lib/modules/$release/modules.alias" &&
	[ -z "$(ls "$un/etc/modprobe.d/" 2>/dev/null)" ]
res $? uninstall_leaves_rdma_ucm "make uninstall rc=$rc: $(tail -n 3 "$log" | tr '\n' ' ')"

# 3-4. DKMS: add and build against the cached kernel (any user, with
# dkms's trees in the checkout), then install (dkms allows that to root
# only, whatever the trees).
log=$build/logs/dkms.log
d=$build/dkms
rm -rf "$d"
mkdir -p "$d/tree" "$d/install/$release"
# dkms wants /usr/src-style NAME-VERSION.
copy_sources "$d/src/ucma-rs-$version"
opts=(--dkmstree "$d/tree" --sourcetree "$d/src" --installtree "$d/install" -k "$release"
	--kernelsourcedir "$kdir" --no-depmod)
{
	in_root sh -c 'command -v dkms' &&
		in_root dkms add "${opts[@]}" -m ucma-rs -v "$version" &&
		in_root dkms build "${opts[@]}" -m ucma-rs -v "$version" &&
		in_root dkms status "${opts[@]}" -m ucma-rs
} >"$log" 2>&1
[ $? = 0 ] && grep -q "ucma-rs/$version, $release, .*: built" "$log"
res $? dkms_add_build "$log"
if [ "$(id -u)" != 0 ]; then
	n=$((n + 1)) skip=$((skip + 1))
	echo "ok $n dkms_install # SKIP dkms installs as root only"
else
	{
		in_root dkms install "${opts[@]}" -m ucma-rs -v "$version" &&
			in_root dkms status "${opts[@]}" -m ucma-rs
	} >>"$log" 2>&1
	[ $? = 0 ] && grep -q "ucma-rs/$version, $release, .*: installed" "$log" &&
		[ -n "$(find "$d/install" -name 'ucma_rs.ko*' -path "*$release*")" ]
	res $? dkms_install "$log"
fi

# 5. dkms.conf's version is the module's.
grep -qx "PACKAGE_VERSION=\"$version\"" dkms.conf
res $? dkms_conf_version_is_VERSION dkms.conf

# 6. A headers-only tree: what the kernel's own install-extmod-build puts in
# a headers package, plus the Rust metadata a Rust module links against.
# (Debian's kernel: its headers tree is one; the module installed above was
# built against it, and must carry the vermagic of Debian's own modules.)
log=$build/logs/headers.log
h=$build/headers
rm -rf "$h"
if [ $debian = 1 ]; then
	{
		! [ -e "$kdir/drivers" ] && [ -n "$installed_ko" ] &&
			modinfo -F vermagic "$installed_ko" &&
			modinfo -F vermagic "$kernel_modules"/kernel/drivers/infiniband/core/rdma_cm.ko*
	} >"$log" 2>&1
	[ $? = 0 ] && [ "$(sed -n 1p "$log")" = "$(sed -n 2p "$log")" ]
else
	{
		scripts/headers-tree "$kdir" "$h/kernel" &&
			! [ -e "$h/kernel/drivers" ] &&
			copy_sources "$h/src" &&
			make -C "$h/src" KDIR="$h/kernel" modules &&
			modinfo "$h/src/ucma_rs.ko"
	} >"$log" 2>&1
	[ $? = 0 ] && [ "$(modinfo -F vermagic "$h/src/ucma_rs.ko")" = "$(modinfo -F vermagic "$installed_ko")" ]
fi
res $? build_against_headers_only_tree "$log"

# 7. A rustc other than the kernel's is refused before compiling, in one
# line naming both.
log=$build/logs/rustc-mismatch.log
fake=$build/fake-rustc
printf '#!/bin/sh\necho "rustc 1.0.0 (ffffffff 2015-05-15)"\n' >"$fake"
chmod +x "$fake"
kmake -s -C "$src" KDIR="$kdir" RUSTC="$fake" modules >"$log" 2>&1
rc=$?
[ $rc != 0 ] && [ "$(grep -c '^ucma_rs: ' "$log")" = 1 ] &&
	grep -qF "ucma_rs: rustc mismatch: the kernel was built with '$(sed -n 's/^CONFIG_RUSTC_VERSION_TEXT=//p' "$kdir/include/config/auto.conf")', RUSTC=$fake is 'rustc 1.0.0 (ffffffff 2015-05-15)'" "$log" &&
	! grep -q '\[M\]' "$log"
res $? mismatched_rustc_refused "$log"

# 8-9. make kdir-check: OK on the cached kernel; on a copy of its
# configuration without CONFIG_INFINIBAND_USER_ACCESS, one line naming it.
log=$build/logs/kdir-check.log
kmake -s -C "$src" KDIR="$kdir" kdir-check >"$log" 2>&1
rc=$?
[ $rc = 0 ] && [ "$(wc -l <"$log")" = 1 ] && grep -q "^ucma_rs: $kdir: OK (kernel $release, " "$log"
res $? kdir_check_ok "$(cat "$log")"
bad=$build/kdir-bad
rm -rf "$bad"
mkdir -p "$bad/include/config"
cp "$kdir/Makefile" "$bad/"
cp "$kdir/include/config/kernel.release" "$bad/include/config/"
grep -v '^CONFIG_INFINIBAND_USER_ACCESS=' "$kdir/include/config/auto.conf" >"$bad/include/config/auto.conf"
kmake -s -C "$src" KDIR="$bad" kdir-check >"$log" 2>&1
rc=$?
[ $rc != 0 ] && [ "$(grep -c '^ucma_rs: ' "$log")" = 1 ] &&
	grep -q "^ucma_rs: $bad is a kernel without CONFIG_INFINIBAND_USER_ACCESS: .*(enable it, y or m)" "$log"
res $? kdir_check_names_the_fix "rc=$rc: $(cat "$log")"
rm -rf "$bad"

echo "# $((n - fail - skip)) passed, $fail failed, $skip skipped"
[ $fail = 0 ]
