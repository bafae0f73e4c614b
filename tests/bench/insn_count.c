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
 * Built by scripts/bench (cc -shared -fPIC), with qemu_plugin_api.h: the
 * few functions of QEMU's plugin API (version 1, as in QEMU 7.2) it calls,
 * so that it needs no QEMU headers.
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "qemu_plugin_api.h"

__attribute__((visibility("default"))) int qemu_plugin_version = 1;

/* Executed instructions at kernel addresses, and at user ones. */
static uint64_t kernel_insns, user_insns;

static const uint8_t marker[] = { 0x0f, 0x1f, 0x80, 0 /* tag */, 0x75, 0x63, 0x6d };

static void on_marker(unsigned int vcpu, void *tag)
{
	char line[96];

	snprintf(line, sizeof(line), "insn-mark %u %" PRIu64 " %" PRIu64 "\n",
		 (unsigned int)(uintptr_t)tag, kernel_insns, user_insns);
	qemu_plugin_outs(line);
}

static void on_translate(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
	size_t n = qemu_plugin_tb_n_insns(tb);
	/* The upper half of the 48- or 57-bit address space: the kernel's. */
	int kernel = qemu_plugin_tb_vaddr(tb) >> 63;

	qemu_plugin_register_vcpu_tb_exec_inline(tb, QEMU_PLUGIN_INLINE_ADD_U64,
						 kernel ? &kernel_insns : &user_insns, n);
	if (kernel)
		return;
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
