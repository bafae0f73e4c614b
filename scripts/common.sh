# SPDX-License-Identifier: GPL-2.0
# Shared settings for the ucma-rs scripts. Sourced, never run.
#
# Everything built or downloaded lives under $UCMA_CACHE (outside the
# repository): the kernel source, the kernel builds keyed by source, config
# and toolchain, the virtme-ng venv.

UCMA_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
UCMA_CACHE=${UCMA_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/ucma-rs}

# The kernel's Rust toolchain: Debian's rustc-web (1.96), never rustup's.
KERNEL_VERSION=${KERNEL_VERSION:-7.3}
LLVM_SUFFIX=-19
# The bench kernel's (scripts/build-kernel bench): inlining the C helpers
# into Rust needs clang on rustc's LLVM.
BENCH_LLVM_SUFFIX=-22
K_RUSTC=/usr/bin/rustc
K_CLIPPY=/usr/bin/clippy-driver
K_RUST_LIB_SRC=/usr/lib/rustlib/src/rust/library
K_BINDGEN=${K_BINDGEN:-$HOME/.cargo/bin/bindgen}
# The bench kernel's bindgen: 7.3's Makefile warns that bindgen older than
# 0.72.1 with libclang 22 or later "may not work" (rust-bindgen PR 3278),
# and with 0.71.1 it made every kernel struct opaque (rust/kernel.o then
# fails: "no field `parent` on type `bindings::device`").
BENCH_BINDGEN_VERSION=0.72.1
BENCH_BINDGEN=$UCMA_CACHE/bindgen-$BENCH_BINDGEN_VERSION/bin/bindgen
VENV=$UCMA_CACHE/venv

# The make variables every kernel and module build gets.
kmake_vars() {
	printf '%s\n' "LLVM=$LLVM_SUFFIX" "RUSTC=$K_RUSTC" "HOSTRUSTC=$K_RUSTC" \
		"CLIPPY_DRIVER=$K_CLIPPY" "BINDGEN=$K_BINDGEN" \
		"RUST_LIB_SRC=$K_RUST_LIB_SRC"
}

log() { printf '[%s] %s\n' "$(basename "$0")" "$*" >&2; }
die() { log "error: $*"; exit 1; }

# A long step: runs "$@" with its whole output in $UCMA_CACHE/logs/$1.log
# (the first argument names the step), shows a progress line every
# UCMA_PROGRESS seconds (default 60) and the elapsed time at the end, and
# on failure the last 40 lines of the log. Returns the command's status.
run_logged() {
	local name=$1 logf start pid rc=0 last now
	shift
	mkdir -p "$UCMA_CACHE/logs"
	logf=$UCMA_CACHE/logs/$name.log
	start=$(date +%s) last=$start
	log "$name: running, full output in $logf"
	"$@" >"$logf" 2>&1 &
	pid=$!
	while kill -0 "$pid" 2>/dev/null; do
		sleep 1
		now=$(date +%s)
		if [ $((now - last)) -ge "${UCMA_PROGRESS:-60}" ]; then
			last=$now
			log "$name: $((now - start)) s, $(wc -l <"$logf") lines of log"
		fi
	done
	wait "$pid" || rc=$?
	if [ $rc = 0 ]; then
		log "$name: done in $(($(date +%s) - start)) s"
	else
		log "$name: FAILED (exit $rc) after $(($(date +%s) - start)) s; the end of $logf:"
		tail -n 40 "$logf" >&2
	fi
	return $rc
}

# Copies the tree as it is (tracked files and untracked ones git does not
# ignore; not tests/build) into directory $1, for a build that must not
# share the checkout's kbuild objects with another running at once.
copy_tree() {
	mkdir -p "$1"
	(cd "$UCMA_ROOT" && git ls-files -z -co --exclude-standard | grep -zv '^tests/build/' |
		xargs -0 cp --parents -t "$1")
}

# The kernel source (Debian's linux-source-$KERNEL_VERSION, which
# scripts/setup installs), unpacked once under $UCMA_CACHE/src: prints its
# path. Every build uses it with O=, so it stays pristine. The unpacking
# holds a lock: the debug kernel's build (scripts/check runs it in the
# background) and scripts/uapi-headers may both come to it first.
kernel_source_unpacked() {
	local tarball=/usr/src/linux-source-$KERNEL_VERSION.tar.xz src_version src
	[ -f "$tarball" ] || { log "error: $tarball missing: run scripts/setup first"; return 1; }
	src_version=$(dpkg-query -W -f='${Version}' "linux-source-$KERNEL_VERSION")
	src=$UCMA_CACHE/src/linux-source-$KERNEL_VERSION-$src_version
	mkdir -p "$UCMA_CACHE/src"
	(
		flock 8
		if [ ! -f "$src/.ucma-unpacked" ]; then
			log "unpacking $tarball"
			rm -rf "$src" && mkdir -p "$src"
			tar -xf "$tarball" -C "$src" --strip-components=1
			touch "$src/.ucma-unpacked"
		fi
	) 8>"$UCMA_CACHE/src/.lock" || return 1
	echo "$src"
}

# Where the cached build of kernel flavour $1 (default, debug) is:
# the symlink written by scripts/build-kernel after a successful build.
kernel_dir() {
	local link=$UCMA_CACHE/kernel-${1:-default}
	[ -e "$link" ] || return 1
	readlink -f "$link"
}

# The C test programs, as tests/<directory>/<name>.c, each with the
# libraries it links beyond libc; the binaries go to tests/build/<name>.
C_TESTS=(abi/ucma_abi abi/ucma_cmds abi/ucma_efault abi/ucma_diff scale/ucma_scale
	limits/ucma_limits races/ucma_races:-libverbs peer/ucma_peer:-libverbs
	fail-nth/ucma_failnth fail-nth/ucma_handler_faults fuzz/ucma_fuzz:-libverbs
	coverage/ucma_kcov)

# The kernel source of build tree $1: its "source" link (a build with O=,
# as scripts/build-kernel makes), the tree itself (an in-tree build), or
# else the cached source of this KERNEL_VERSION (scripts/setup unpacks it).
kernel_source_dir() {
	local d
	for d in "$1/source" "$1" "$UCMA_CACHE"/src/linux-source-"$KERNEL_VERSION"-*; do
		if [ -f "$d/tools/testing/selftests/kselftest_harness.h" ]; then
			readlink -f "$d"
			return 0
		fi
	done
	return 1
}

# Compiles one C test program: build_c_test KDIR SOURCE OUTPUT [LIBS...],
# against the uapi headers of kernel KDIR, with the shared headers of
# tests/lib and the kernel source's kselftest_harness.h (used where it
# is, never copied).
build_c_test() {
	local kdir=$1 src=$2 out=$3 ksrc
	shift 3
	ksrc=$(kernel_source_dir "$kdir") || {
		log "error: no tools/testing/selftests/kselftest_harness.h in the source of $kdir" \
			"(nor in $UCMA_CACHE/src): the C tests include it; scripts/setup unpacks the kernel source"
		return 1
	}
	gcc -O2 -Wall -Werror -pthread -I "$kdir/usr/include" -I "$UCMA_ROOT/tests/lib" \
		-I "$ksrc/tools/testing/selftests" -o "$out" "$src" "$@"
}

# The userspace tests: the C suites (C_TESTS) against the uapi headers of
# kernel $1, and the Rust harness (tests/abi_rs).
build_tests() {
	local t src libs b=$UCMA_ROOT/tests/build
	mkdir -p "$b"
	for t in "${C_TESTS[@]}"; do
		src=${t%%:*} libs=
		[ "$src" = "$t" ] || libs=${t#*:}
		# shellcheck disable=SC2086 # libs: words
		build_c_test "$1" "$UCMA_ROOT/tests/$src.c" "$b/${src##*/}" $libs || return 1
	done
	cargo build --release --quiet --manifest-path "$UCMA_ROOT/tests/abi_rs/Cargo.toml" \
		--target-dir "$b/cargo"
	cp "$b/cargo/release/ucma_abi_rs" "$b/"
}

# The Debian archive address this machine's own apt sources use for its
# release codename (bookworm), for the trixie suites (scripts/setup,
# scripts/trixie-root); with an argument, the one that serves the suite
# <codename>$1 (debian_archive_uri -security).
debian_archive_uri() {
	local codename
	codename=$(. /etc/os-release && echo "$VERSION_CODENAME")${1:-}
	{
		# deb822 stanzas
		awk -v c="$codename" '
			FNR == 1 { if (hit && uris != "") { split(uris, u, " "); print u[1] } hit = 0; uris = "" }
			/^[Uu][Rr][Ii][Ss]:/ { uris = $0; sub(/^[^:]*:[ \t]*/, "", uris) }
			/^[Ss]uites:/ { for (i = 2; i <= NF; i++) if ($i == c) hit = 1 }
			/^[ \t]*$/ { if (hit && uris != "") { split(uris, u, " "); print u[1] } hit = 0; uris = "" }
			END { if (hit && uris != "") { split(uris, u, " "); print u[1] } }
		' /etc/apt/sources.list.d/*.sources 2>/dev/null || true
		# one-line format
		awk -v c="$codename" '$1 == "deb" && $3 == c { print $2 }' \
			/etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null || true
	} | head -n 1
}

# Runs "$@" in the trixie root (scripts/trixie-root) as root, in a mount
# namespace of its own: /proc, /sys and /dev, and $UCMA_CACHE and the
# repository at their own paths, are mounted for the command and vanish
# with it. The environment is reset but for PATH, HOME, UCMA_CACHE and
# what TRIXIE_ENV (words NAME=VALUE) adds.
in_trixie() {
	local root
	root=$("$UCMA_ROOT/scripts/trixie-root" --print) || return 1
	unshare --mount --propagation private /bin/sh -ec '
		root=$1 cache=$2 repo=$3
		shift 3
		mount -t proc proc "$root/proc"
		mount --rbind /sys "$root/sys"
		mount --rbind /dev "$root/dev"
		mkdir -p "$root$cache" "$root$repo"
		mount --bind "$cache" "$root$cache"
		mount --bind "$repo" "$root$repo"
		exec chroot "$root" "$@"
	' sh "$root" "$UCMA_CACHE" "$UCMA_ROOT" \
		env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 \
		UCMA_CACHE="$UCMA_CACHE" ${TRIXIE_ENV:-} "$@"
}

# Debian's own kernel (trixie-backports), for `scripts/vm-run --kernel
# debian`: its linux-binary and linux-modules packages (downloaded by
# scripts/trixie-root) unpacked with dpkg -x into
# $UCMA_CACHE/debian-kernel-<release> and depmod run there; nothing is
# installed into the host's /boot or module tree. Prints the directory
# (vmlinuz is usr/lib/modules/<release>/vmlinuz in it).
DEBIAN_KVER=${DEBIAN_KVER:-7.3.4+deb13}
DEBIAN_KPKGVER=${DEBIAN_KPKGVER:-7.3.4-1~bpo13+1}
DEBIAN_FLAVOUR=${DEBIAN_FLAVOUR:-amd64}
debian_kernel_dir() {
	local rel=$DEBIAN_KVER-$DEBIAN_FLAVOUR debs=$UCMA_CACHE/trixie-root/debs/$DEBIAN_KPKGVER
	local dir=$UCMA_CACHE/debian-kernel-$rel f
	if [ ! -f "$dir/unpacked" ]; then
		ls "$debs"/linux-binary-"$rel"_*.deb "$debs"/linux-modules-"$rel"_*.deb >/dev/null 2>&1 ||
			"$UCMA_ROOT/scripts/trixie-root" >/dev/null || return 1
		rm -rf "$dir"
		mkdir -p "$dir"
		for f in "$debs"/linux-binary-"$rel"_*.deb "$debs"/linux-modules-"$rel"_*.deb; do
			dpkg -x "$f" "$dir" || return 1
		done
		# depmod -b reads <base>/lib/modules; the packages ship usr/lib/modules.
		# (virtme-ng finds the tree from vmlinuz's path either way.)
		ln -sfn usr/lib "$dir/lib"
		# (The packages carry no modules.order or modules.builtin: depmod
		# says so, harmlessly.)
		depmod -b "$dir" "$rel" 2>/dev/null || return 1
		touch "$dir/unpacked"
	fi
	echo "$dir"
}

# Prints the usage of script $1: its header comment, from the line after the
# SPDX line to the first line that is not a comment, without the "# ".
help_from_header() {
	awk 'NR > 2 && !/^#/ { exit } NR > 2 { sub(/^# ?/, ""); print }' "$1"
}
