# SPDX-License-Identifier: GPL-2.0
#
# ucma-rs: out-of-tree build and the two entry points.
#
#   make help             what follows, in short
#   make                  build ucma_rs.ko against the cached test kernel
#   make KDIR=/path       ... against any CONFIG_RUST=y kernel build tree
#   make CLIPPY=1         ... with clippy
#   make modules_install  install it into /lib/modules/<release>/updates
#                         (INSTALL_MOD_PATH=<root> for another root) and run depmod
#   make kdir-check       is KDIR a kernel ucma_rs builds against, with this
#                         toolchain? prints OK or the one fix
#   make uninstall        remove what modules_install and provider-* put
#                         there; the host is left on the C rdma_ucm
#   make provider-ucma-rs / provider-rdma-ucm
#                         install the modprobe.d file that makes ucma_rs (or
#                         the C rdma_ucm) the module that serves rdma_cm
#   make run              the main job: setup if needed, boot the VM with
#                         ucma_rs loaded, run rping through it over siw
#   make setup            install the toolchain and build the cached test
#                         kernel (KERNEL=debug: the debug one); make run and
#                         make check do it themselves
#   make check            all tests: host tier (cargo), the VM tier (KTAP)
#                         on Debian's own kernel, the debug kernel
#   make check KERNEL=default   the VM tier on a kernel of ours (default,
#                         debug, bench) instead of Debian's
#   make host-test        only the host tier
#   make vm-test          only the VM tier (scripts/check --vm-only)
#   make bench            ucma_rs against the C rdma_ucm, both in one VM
#                         boot, on the default kernel and on the bench
#                         kernel (Rust's C helpers inlined): per kernel a
#                         table of medians and paired ratios with
#                         intervals, instruction counts, and plots
#                         (BENCH_ROUNDS=N, default 5; KERNEL=NAME: on that
#                         kernel only)
#   make mutants          the kept one-line faults (tests/mutants/*.patch):
#                         each built and booted with the suite that must
#                         catch it; a table of caught/survived
#   make coverage         which functions of ucma_rs the VM suites reach:
#                         KCOV on the debug kernel, one boot
#                         (scripts/coverage; SUITES= names some)
#   make fmt / fmt-check  rustfmt with the kernel's config
#   make clean            remove the kbuild objects and ucma_core's target/

KERNEL ?= default
UCMA_CACHE ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/ucma-rs
KDIR ?= $(UCMA_CACHE)/kernel-$(KERNEL)

# The kernel's toolchain (on a machine scripts/setup prepared, the same as
# scripts/common.sh's). Each can be overridden, and must be what the
# kernel in KDIR was built with:
# scripts/toolchain-check compares the C compiler (clang or gcc), rustc and
# bindgen with its config, and checks that its Rust metadata is there.
# LLVM: the suffix of the clang that built the kernel in KDIR (its
# CONFIG_CLANG_VERSION: -19 for the test kernels, -22 for the bench one),
# -19 when KDIR says nothing.
KERNEL_CLANG_MAJOR := $(shell sed -n 's/^CONFIG_CLANG_VERSION=\([0-9]*\)[0-9]\{4\}$$/\1/p' \
	$(KDIR)/include/config/auto.conf 2>/dev/null)
LLVM ?= -$(or $(KERNEL_CLANG_MAJOR),19)
RUSTC ?= /usr/bin/rustc
HOSTRUSTC ?= $(RUSTC)
CLIPPY_DRIVER ?= /usr/bin/clippy-driver
# bindgen: cargo's (scripts/setup installs it there) if this user has it,
# else the one in PATH (sudo, DKMS, a distribution's bindgen package).
# The bench kernel's own (scripts/common.sh's BENCH_BINDGEN) when KDIR was
# built with that version.
KERNEL_BINDGEN_VERSION := $(shell sed -n 's/^CONFIG_BINDGEN_VERSION_TEXT="\{0,1\}bindgen \([^"]*\)"\{0,1\}$$/\1/p' \
	$(KDIR)/include/config/auto.conf 2>/dev/null)
BINDGEN ?= $(firstword $(wildcard $(UCMA_CACHE)/bindgen-$(KERNEL_BINDGEN_VERSION)/bin/bindgen) \
	$(wildcard $(HOME)/.cargo/bin/bindgen) bindgen)
# The standard library's source, where that rustc's sysroot keeps it.
ifndef RUST_LIB_SRC
RUST_LIB_SRC := $(shell $(RUSTC) --print sysroot 2>/dev/null)/lib/rustlib/src/rust/library
endif
KMAKE_VARS = $(KMAKE_CC) RUSTC=$(RUSTC) HOSTRUSTC=$(HOSTRUSTC) \
	CLIPPY_DRIVER=$(CLIPPY_DRIVER) BINDGEN=$(BINDGEN) RUST_LIB_SRC=$(RUST_LIB_SRC)

# Which compiler built the kernel in KDIR: clang (LLVM=) or gcc.
KCONFIG_AUTO = $(KDIR)/include/config/auto.conf
KERNEL_CC_IS_GCC := $(shell grep -qs '^CONFIG_CC_IS_GCC=y' $(KCONFIG_AUTO) && echo y)
ifeq ($(KERNEL_CC_IS_GCC),y)
# A gcc-built kernel: its C compiler is the first word of its version text
# ("gcc-14 (Debian 14.2.0-19) 14.2.0": the name it was invoked by), unless
# CC is given on the command line. No LLVM= is handed to kbuild.
KCC := $(if $(filter command line,$(origin CC)),$(CC),$(shell \
	sed -n 's/^CONFIG_CC_VERSION_TEXT="\{0,1\}\([^" ]*\).*/\1/p' $(KCONFIG_AUTO)))
KMAKE_CC = CC=$(KCC)
else
# The C compiler kbuild derives from LLVM (1, a -suffix or a /prefix/).
KCC = $(if $(filter 1,$(LLVM)),clang,$(if $(filter %/,$(LLVM)),$(LLVM)clang,clang$(LLVM)))
KMAKE_CC = LLVM=$(LLVM)
# bindgen parses the kernel's headers with the kernel's C flags, so its
# libclang must be that clang's: left alone, it loads the newest libclang
# installed (with clang-22 beside clang-19, libclang-22, which then leaves
# struct rdma_cm_id opaque and the module unbuildable). For a -NN suffix,
# LLVM's own directory for that version (LIBCLANG_PATH on the command line
# overrides it).
UCMA_LIBCLANG_DIR = $(if $(filter -%,$(LLVM)),$(wildcard /usr/lib/llvm$(LLVM)/lib))
ifneq ($(UCMA_LIBCLANG_DIR),)
export LIBCLANG_PATH := $(UCMA_LIBCLANG_DIR)
endif
endif
# For a clang-built kernel dkms 3.0 appends CC=clang LD=ld.lld to its
# make command (dkms 3.2 appends LLVM=1, which is handed on). Here the
# kernel's compilers are the ones LLVM names (suffix included): plain
# `clang` may be another version, or, with Debian's clang-19, absent. So
# CC and LD given on the command line are not handed to kbuild (for a
# gcc-built kernel, CC is handed on as KCC above).
MAKEOVERRIDES := $(filter-out CC=% LD=%,$(MAKEOVERRIDES))

# Where modules_install and the provider-* targets write (as kbuild's own).
INSTALL_MOD_PATH ?=
MODPROBE_D = $(INSTALL_MOD_PATH)/etc/modprobe.d

.PHONY: all help modules kdir-check modules_install uninstall provider-ucma-rs provider-rdma-ucm clean run check \
	host-test vm-test fmt fmt-check setup bench mutants coverage

all: modules

help:
	@sed -n '/^#   make/,/^$$/p' Makefile | sed 's/^# \{0,1\}//'

# The module of each kernel is kept as build/<release>/ucma_rs.ko (the
# kbuild objects themselves are rebuilt whenever KDIR changes), which is
# what scripts/vm-run boots with.
kdir-check:
	@scripts/toolchain-check --ok "$(KDIR)" "$(KCC)" "$(RUSTC)" "$(BINDGEN)"

modules:
	@scripts/toolchain-check "$(KDIR)" "$(KCC)" "$(RUSTC)" "$(BINDGEN)"
	$(MAKE) -C $(KDIR) M=$(CURDIR) $(KMAKE_VARS) $(if $(CLIPPY),CLIPPY=1) modules
	@install -D -m 644 ucma_rs.ko build/$$(cat $(KDIR)/include/config/kernel.release)/ucma_rs.ko

# kbuild installs an external module into updates/ (INSTALL_MOD_DIR), where
# depmod ranks it above the kernel's own, then runs depmod.
# The release of KDIR's kernel: where modules_install puts the module.
modules_install uninstall: KRELEASE = $(shell cat $(KDIR)/include/config/kernel.release)

# kbuild runs depmod only when KDIR has a System.map, which a
# distribution's headers package (Debian's linux-headers-*) does not
# carry: it says "Skipping depmod" and modprobe cannot find the module.
# Then depmod is run here.
modules_install:
	$(MAKE) -C $(KDIR) M=$(CURDIR) $(KMAKE_VARS) INSTALL_MOD_DIR=updates \
		$(if $(INSTALL_MOD_PATH),INSTALL_MOD_PATH=$(INSTALL_MOD_PATH)) modules_install
	$(if $(wildcard $(KDIR)/System.map),,depmod $(if $(INSTALL_MOD_PATH),-b $(INSTALL_MOD_PATH)) $(KRELEASE))

uninstall:
	rm -f $(INSTALL_MOD_PATH)/lib/modules/$(KRELEASE)/updates/ucma_rs.ko* \
		$(MODPROBE_D)/ucma-rs.conf $(MODPROBE_D)/rdma-ucm.conf
	depmod $(if $(INSTALL_MOD_PATH),-b $(INSTALL_MOD_PATH)) $(KRELEASE)

provider-ucma-rs:
	install -d $(MODPROBE_D)
	rm -f $(MODPROBE_D)/rdma-ucm.conf
	install -m 644 modprobe.d/ucma-rs.conf $(MODPROBE_D)/

provider-rdma-ucm:
	install -d $(MODPROBE_D)
	rm -f $(MODPROBE_D)/ucma-rs.conf
	install -m 644 modprobe.d/rdma-ucm.conf $(MODPROBE_D)/

clean:
	-test -e $(KDIR)/Makefile && $(MAKE) -C $(KDIR) M=$(CURDIR) $(KMAKE_VARS) clean
	-test -e $(KDIR)/Makefile && $(MAKE) -C $(KDIR) M=$(CURDIR)/tests/splat $(KMAKE_VARS) clean
	cd ucma_core && cargo clean

setup:
	scripts/setup --kernel $(KERNEL)

run:
	scripts/run-main

check:
	scripts/check $(if $(filter command line environment,$(origin KERNEL)),--kernel $(KERNEL))

mutants:
	scripts/mutants --kernel $(KERNEL)

coverage:
	scripts/coverage $(SUITES)

# Both test kernels unless KERNEL names one; each table in
# tests/build/bench/<kernel>/bench.md.
BENCH_KERNELS = $(if $(filter command line environment,$(origin KERNEL)),$(KERNEL),default bench)
bench:
	@start=$$(date +%s); \
	for k in $(BENCH_KERNELS); do \
		scripts/bench --kernel $$k --rounds $(or $(BENCH_ROUNDS),5) \
			--out tests/build/bench/$$k || exit 1; \
	done; \
	echo "make bench: kernels $(BENCH_KERNELS), $(or $(BENCH_ROUNDS),5) rounds," \
		"$$((($$(date +%s) - start + 30) / 60)) min;" \
		"tables in $(foreach k,$(BENCH_KERNELS),tests/build/bench/$(k)/bench.md)"

host-test:
	cd ucma_core && cargo test

vm-test:
	scripts/check $(if $(filter command line environment,$(origin KERNEL)),--kernel $(KERNEL)) --vm-only

RUSTFMT_FILES = $(filter-out %_generated.rs,$(wildcard rust/*.rs rust/*/*.rs)) $(wildcard ucma_core/src/*.rs) \
	$(wildcard tests/abi_rs/src/*.rs)
fmt:
	rustfmt --edition 2021 --config-path $(KDIR)/source/.rustfmt.toml $(RUSTFMT_FILES)
fmt-check:
	rustfmt --check --edition 2021 --config-path $(KDIR)/source/.rustfmt.toml $(RUSTFMT_FILES)
