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
 *   insn-mark TAG KERNEL USER BLOCKS CALLS ATOMICS
 *
 * so the difference of two marks is what the guest executed between them:
 * an instruction count that host noise cannot move, for figures a timing
 * under TCG cannot resolve. KERNEL and USER count instructions; the last
 * three count, at kernel addresses only, what costs TCG more than its
 * instruction count says:
 *
 *   BLOCKS   translation blocks entered: each is a dispatch (chained to
 *            the previous block or looked up);
 *   CALLS    calls, direct and indirect (each is followed by a return, an
 *            indirect jump that TCG looks up in its hash of blocks, as it
 *            does a call to another page);
 *   ATOMICS  read-modify-writes with a LOCK prefix, or the DS prefix the
 *            kernel patches LOCK into when only one CPU can be online (as
 *            in the one-vCPU boot that counts), and XCHG with memory: the
 *            atomic operations, which TCG runs through helpers when the
 *            guest has more than one vCPU.
 *
 * They are decoded from each instruction's bytes when its block is
 * translated (legacy and REX prefixes, then the opcode and its ModRM), so
 * that executing a block adds constants, as for the instructions.
 *
 * The counts are exact only with one vCPU (-smp 1): the counters are plain
 * inline additions, per translation block (a whole block counts once
 * entered), and a second vCPU would race them. Everything the vCPU runs
 * is counted: the process's syscalls, the interrupts and workqueue items
 * that run between the marks too; the guest side (tests/bench/ucma_bench.c,
 * insns) repeats each figure and keeps the lowest.
 *
 * Tags 3 and 4 open and close a profiled window: at 3 the count of every
 * kernel block is zeroed, at 4 each block the window entered prints
 *
 *   insn-prof VADDR INSNS CALLS ATOMICS
 *
 * (its start address in hex, and its instructions, calls and atomics,
 * each times its entries),
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
/* At kernel addresses: blocks entered, calls, atomic read-modify-writes. */
static uint64_t kernel_blocks, kernel_calls, kernel_atomics;

static const uint8_t marker[] = { 0x0f, 0x1f, 0x80, 0 /* tag */, 0x75, 0x63, 0x6d };

/* Every kernel block translated so far, with its entries (for profiles). */
struct block {
	uint64_t vaddr, n_insns, n_calls, n_atomics, entries;
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
	char line[128];

	for (size_t i = 0; i < n_blocks; i++) {
		const struct block *b = blocks[i];

		if (!b->entries)
			continue;
		snprintf(line, sizeof(line),
			 "insn-prof %" PRIx64 " %" PRIu64 " %" PRIu64 " %" PRIu64 "\n", b->vaddr,
			 b->n_insns * b->entries, b->n_calls * b->entries,
			 b->n_atomics * b->entries);
		qemu_plugin_outs(line);
	}
	qemu_plugin_outs("insn-prof-end\n");
}

/* What an instruction is, for the counters beside the instructions. */
enum insn_kind { INSN_OTHER, INSN_CALL, INSN_ATOMIC };

/*
 * Whether opcode OP (0x0f-escaped if TWO), with ModRM reg field REG, is one
 * that takes a LOCK prefix: a read-modify-write of a memory operand.
 */
static int lockable(int two, uint8_t op, unsigned int reg)
{
	if (two)
		return op == 0xb0 || op == 0xb1 || op == 0xc0 || op == 0xc1 || /* cmpxchg, xadd */
		       op == 0xab || op == 0xb3 || op == 0xbb ||		/* bts, btr, btc */
		       (op == 0xba && reg >= 5) || (op == 0xc7 && reg == 1);
	if (op < 0x40)		/* add, or, adc, sbb, and, sub, xor: r/m, reg */
		return (op & 7) <= 1 && (op & 0x38) != 0x38;
	if (op >= 0x80 && op <= 0x83)
		return reg != 7;	/* not cmp */
	if (op == 0xf6 || op == 0xf7)
		return reg == 2 || reg == 3; /* not, neg */
	if (op == 0xfe || op == 0xff)
		return reg <= 1;	/* inc, dec */
	return 0;
}

/* The legacy prefixes: LOCK, the segments (DS among them), sizes, REP. */
static const uint8_t prefixes[] = {
	0xf0, 0x26, 0x2e, 0x36, 0x3e, 0x64, 0x65, 0x66, 0x67, 0xf2, 0xf3,
};

static enum insn_kind classify(const uint8_t *p, size_t n)
{
	int lock = 0, two = 0;
	size_t i = 0;
	uint8_t op, modrm;

	/* Legacy prefixes: LOCK, or DS where the kernel patched LOCK out. */
	for (; i < n && memchr(prefixes, p[i], sizeof(prefixes)); i++)
		lock |= p[i] == 0xf0 || p[i] == 0x3e;
	if (i < n && (p[i] & 0xf0) == 0x40)
		i++;		/* REX */
	if (i < n && p[i] == 0x0f) {
		two = 1;
		i++;
	}
	if (i >= n)
		return INSN_OTHER;
	op = p[i];
	modrm = i + 1 < n ? p[i + 1] : 0xc0;
	if (!two && op == 0xe8)
		return INSN_CALL;
	if (!two && op == 0xff && i + 1 < n && ((modrm >> 3) & 7) >= 2 && ((modrm >> 3) & 7) <= 3)
		return INSN_CALL;
	if (i + 1 >= n || (modrm >> 6) == 3)
		return INSN_OTHER;	/* no memory operand */
	if (!two && (op == 0x86 || op == 0x87))
		return INSN_ATOMIC;	/* xchg with memory locks without a prefix */
	return lock && lockable(two, op, (modrm >> 3) & 7) ? INSN_ATOMIC : INSN_OTHER;
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
	snprintf(line, sizeof(line),
		 "insn-mark %u %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 "\n", t,
		 kernel_insns, user_insns, kernel_blocks, kernel_calls, kernel_atomics);
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
		uint64_t calls = 0, atomics = 0;

		for (size_t i = 0; i < n; i++) {
			struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);
			size_t size = qemu_plugin_insn_size(insn);

			switch (classify(qemu_plugin_insn_data(insn), size)) {
			case INSN_CALL:
				calls++;
				break;
			case INSN_ATOMIC:
				atomics++;
				break;
			default:
				break;
			}
		}
		qemu_plugin_register_vcpu_tb_exec_inline(tb, QEMU_PLUGIN_INLINE_ADD_U64,
							 &kernel_blocks, 1);
		if (calls)
			qemu_plugin_register_vcpu_tb_exec_inline(tb, QEMU_PLUGIN_INLINE_ADD_U64,
								 &kernel_calls, calls);
		if (atomics)
			qemu_plugin_register_vcpu_tb_exec_inline(tb, QEMU_PLUGIN_INLINE_ADD_U64,
								 &kernel_atomics, atomics);
		if (b) {
			b->n_calls = calls;
			b->n_atomics = atomics;
			qemu_plugin_register_vcpu_tb_exec_inline(tb, QEMU_PLUGIN_INLINE_ADD_U64,
								 &b->entries, 1);
		}
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
