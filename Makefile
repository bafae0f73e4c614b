# SPDX-License-Identifier: GPL-2.0
#
# ucma-rs: out-of-tree build and the two entry points.
#
#   make                  build ucma_rs.ko against the cached test kernel
#   make KDIR=/path       ... against any CONFIG_RUST=y kernel build tree
#   make CLIPPY=1         ... with clippy
#   make run              the main job: setup if needed, boot the VM with
#                         ucma_rs loaded, run rping through it over siw
#   make check            all tests: host tier (cargo) + VM tier (KTAP)
#   make check KERNEL=debug   the VM tier on the debug kernel
#   make host-test        only the host tier
#   make bench            ucma_rs against the C rdma_ucm in one VM boot:
#                         a table of medians and ratios, and plots
#                         (BENCH_ROUNDS=N, default 5)
#   make fmt / fmt-check  rustfmt with the kernel's config

KERNEL ?= default
UCMA_CACHE ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/ucma-rs
KDIR ?= $(UCMA_CACHE)/kernel-$(KERNEL)

# The kernel's toolchain (scripts/common.sh has the same list).
KMAKE_VARS = LLVM=-19 RUSTC=/usr/bin/rustc HOSTRUSTC=/usr/bin/rustc \
	CLIPPY_DRIVER=/usr/bin/clippy-driver BINDGEN=$(HOME)/.cargo/bin/bindgen \
	RUST_LIB_SRC=/usr/lib/rustlib/src/rust/library

.PHONY: all modules clean run check host-test vm-test fmt fmt-check setup bench

all: modules

modules:
	@test -e $(KDIR)/Makefile || { echo "no kernel build at $(KDIR): run scripts/setup (or make check / make run)"; exit 1; }
	$(MAKE) -C $(KDIR) M=$(CURDIR) $(KMAKE_VARS) $(if $(CLIPPY),CLIPPY=1) modules

clean:
	-test -e $(KDIR)/Makefile && $(MAKE) -C $(KDIR) M=$(CURDIR) $(KMAKE_VARS) clean
	-test -e $(KDIR)/Makefile && $(MAKE) -C $(KDIR) M=$(CURDIR)/tests/splat $(KMAKE_VARS) clean
	cd ucma_core && cargo clean

setup:
	scripts/setup --kernel $(KERNEL)

run:
	scripts/run-main

check:
	scripts/check --kernel $(KERNEL)

bench:
	scripts/bench --rounds $(or $(BENCH_ROUNDS),5)

host-test:
	cd ucma_core && cargo test

vm-test:
	scripts/check --kernel $(KERNEL) --vm-only

RUSTFMT_FILES = $(filter-out %_generated.rs,$(wildcard rust/*.rs)) $(wildcard ucma_core/src/*.rs) \
	$(wildcard tests/abi_rs/src/*.rs)
fmt:
	rustfmt --edition 2021 --config-path $(KDIR)/source/.rustfmt.toml $(RUSTFMT_FILES)
fmt-check:
	rustfmt --check --edition 2021 --config-path $(KDIR)/source/.rustfmt.toml $(RUSTFMT_FILES)
