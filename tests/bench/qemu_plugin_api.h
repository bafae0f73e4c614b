/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The part of QEMU's TCG plugin API (version 1, as QEMU 7.2 exports it:
 * nm -D qemu-system-x86_64) that tests/bench/insn_count.c calls, declared
 * here so that the plugin builds without QEMU's headers.
 */
#ifndef QEMU_PLUGIN_API_H
#define QEMU_PLUGIN_API_H

#include <stddef.h>
#include <stdint.h>

typedef uint64_t qemu_plugin_id_t;
struct qemu_plugin_tb;
struct qemu_plugin_insn;
struct qemu_info_t;

/* enum qemu_plugin_cb_flags and enum qemu_plugin_op: their first values. */
#define QEMU_PLUGIN_CB_NO_REGS 0
#define QEMU_PLUGIN_INLINE_ADD_U64 0

void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t id,
					   void (*cb)(qemu_plugin_id_t, struct qemu_plugin_tb *));
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *tb);
uint64_t qemu_plugin_tb_vaddr(const struct qemu_plugin_tb *tb);
struct qemu_plugin_insn *qemu_plugin_tb_get_insn(const struct qemu_plugin_tb *tb, size_t idx);
const void *qemu_plugin_insn_data(const struct qemu_plugin_insn *insn);
size_t qemu_plugin_insn_size(const struct qemu_plugin_insn *insn);
void qemu_plugin_register_vcpu_tb_exec_inline(struct qemu_plugin_tb *tb, int op, void *ptr,
					      uint64_t imm);
void qemu_plugin_register_vcpu_insn_exec_cb(struct qemu_plugin_insn *insn,
					    void (*cb)(unsigned int, void *), int flags,
					    void *userdata);
void qemu_plugin_outs(const char *string);

#endif /* QEMU_PLUGIN_API_H */
