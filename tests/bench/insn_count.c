// SPDX-License-Identifier: GPL-2.0
/*
 * A QEMU TCG plugin (runs on the host, loaded by QEMU with -plugin) that
 * counts the guest's executed instructions, those at kernel addresses
 * (the upper half) and those at user ones apart, and prints both counts
 * each time the guest executes the marker instruction
 *
 *   nopl 0x6d6375XX(%rax)    0f 1f 80 XX 75 63 6d    (XX: the marker's tag)
 *
 * a multi-byte NOP (legal in user mode, no effect) that no compiler emits
 * with this displacement. Each marker prints one line to QEMU's log
 * (-d plugin -D FILE):
 *
 *   insn-mark TAG KERNEL USER
 *
 * so the difference of two marks is what the guest executed between them:
 * an instruction count that host noise cannot move, for figures a timing
 * under TCG cannot resolve. The counts are exact only with one vCPU
 * (-smp 1): the counters are plain inline additions, one per translation
 * block (a whole block counts once entered), and a second vCPU would race
 * them. Everything the vCPU runs is counted: the process's syscalls, the
 * interrupts and workqueue items that run between the marks too; the
 * guest side (tests/bench/ucma_bench.c, insns) repeats each figure and
 * keeps the lowest.
 *
 * Tags 3 and 4 open and close a profiled window: at 3 the count of every
 * kernel block is zeroed, at 4 each block the window entered prints
 *
 *   insn-prof VADDR INSNS
 *
 * (its start address in hex, and its instructions times its entries),
 * then "insn-prof-end"; scripts/bench-profile adds them up by function.
 * A block translated again (the same address) prints once per translation.
 *
 * Built by scripts/bench (cc -shared -fPIC), with qemu_plugin_api.h: the
 * few functions of QEMU's plugin API (version 1, as in QEMU 7.2) it calls,
 * so that it needs no QEMU headers.
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qemu_plugin_api.h"

__attribute__((visibility("default"))) int qemu_plugin_version = 1;

/* Executed instructions at kernel addresses, and at user ones. */
static uint64_t kernel_insns, user_insns;

static const uint8_t marker[] = { 0x0f, 0x1f, 0x80, 0 /* tag */, 0x75, 0x63, 0x6d };

/* Every kernel block translated so far, with its entries (for profiles). */
struct block {
	uint64_t vaddr, n_insns, entries;
};
static struct block **blocks;
static size_t n_blocks, cap_blocks;

static struct block *new_block(uint64_t vaddr, size_t n)
{
	struct block *b = calloc(1, sizeof(*b));

	if (!b)
		return NULL;
	if (n_blocks == cap_blocks) {
		size_t cap = cap_blocks ? 2 * cap_blocks : 4096;
		struct block **grown = realloc(blocks, cap * sizeof(*blocks));

		if (!grown) {
			free(b);
			return NULL;
		}
		blocks = grown;
		cap_blocks = cap;
	}
	b->vaddr = vaddr;
	b->n_insns = n;
	blocks[n_blocks++] = b;
	return b;
}

static void profile_dump(void)
{
	char line[96];

	for (size_t i = 0; i < n_blocks; i++) {
		if (!blocks[i]->entries)
			continue;
		snprintf(line, sizeof(line), "insn-prof %" PRIx64 " %" PRIu64 "\n", blocks[i]->vaddr,
			 blocks[i]->n_insns * blocks[i]->entries);
		qemu_plugin_outs(line);
	}
	qemu_plugin_outs("insn-prof-end\n");
}

static void on_marker(unsigned int vcpu, void *tag)
{
	unsigned int t = (unsigned int)(uintptr_t)tag;
	char line[96];

	if (t == 3) {
		for (size_t i = 0; i < n_blocks; i++)
			blocks[i]->entries = 0;
		return;
	}
	if (t == 4) {
		profile_dump();
		return;
	}
	snprintf(line, sizeof(line), "insn-mark %u %" PRIu64 " %" PRIu64 "\n", t, kernel_insns,
		 user_insns);
	qemu_plugin_outs(line);
}

static void on_translate(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
	size_t n = qemu_plugin_tb_n_insns(tb);
	/* The upper half of the 48- or 57-bit address space: the kernel's. */
	int kernel = qemu_plugin_tb_vaddr(tb) >> 63;

	qemu_plugin_register_vcpu_tb_exec_inline(tb, QEMU_PLUGIN_INLINE_ADD_U64,
						 kernel ? &kernel_insns : &user_insns, n);
	if (kernel) {
		struct block *b = new_block(qemu_plugin_tb_vaddr(tb), n);

		if (b)
			qemu_plugin_register_vcpu_tb_exec_inline(tb, QEMU_PLUGIN_INLINE_ADD_U64,
								 &b->entries, 1);
		return;
	}
	for (size_t i = 0; i < n; i++) {
		struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);
		const uint8_t *b = qemu_plugin_insn_data(insn);

		if (qemu_plugin_insn_size(insn) != sizeof(marker) || memcmp(b, marker, 3) ||
		    memcmp(b + 4, marker + 4, 3))
			continue;
		qemu_plugin_register_vcpu_insn_exec_cb(insn, on_marker, QEMU_PLUGIN_CB_NO_REGS,
						       (void *)(uintptr_t)b[3]);
	}
}

__attribute__((visibility("default"))) int
qemu_plugin_install(qemu_plugin_id_t id, const struct qemu_info_t *info, int argc, char **argv)
{
	qemu_plugin_register_vcpu_tb_trans_cb(id, on_translate);
	return 0;
}
