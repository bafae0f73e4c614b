// SPDX-License-Identifier: GPL-2.0
/*
 * The host test of insn_count.c's decoder (make check's host tier): each
 * instruction below, as the guest kernel's code has it, must be counted
 * as what its comment says. Built with the plugin's source included and
 * QEMU's functions stubbed out; exits 1 on any miscount.
 */
#include "insn_count.c"

void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t id,
					   void (*cb)(qemu_plugin_id_t, struct qemu_plugin_tb *))
{
}
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *tb) { return 0; }
uint64_t qemu_plugin_tb_vaddr(const struct qemu_plugin_tb *tb) { return 0; }
struct qemu_plugin_insn *qemu_plugin_tb_get_insn(const struct qemu_plugin_tb *tb, size_t idx)
{
	return NULL;
}
const void *qemu_plugin_insn_data(const struct qemu_plugin_insn *insn) { return NULL; }
size_t qemu_plugin_insn_size(const struct qemu_plugin_insn *insn) { return 0; }
void qemu_plugin_register_vcpu_tb_exec_inline(struct qemu_plugin_tb *tb, int op, void *ptr,
					      uint64_t imm)
{
}
void qemu_plugin_register_vcpu_insn_exec_cb(struct qemu_plugin_insn *insn,
					    void (*cb)(unsigned int, void *), int flags,
					    void *userdata)
{
}
void qemu_plugin_outs(const char *string) { }

static int failures;

#define EXPECT(kind, text, ...)								\
	do {										\
		static const uint8_t bytes[] = { __VA_ARGS__ };				\
		enum insn_kind got = classify(bytes, sizeof(bytes));			\
		if (got != (kind)) {							\
			printf("not ok: %s: counted as %d, not %d\n", text, got, kind);	\
			failures++;							\
		}									\
	} while (0)

int main(void)
{
	EXPECT(INSN_ATOMIC, "lock xadd %eax,(%rdi)", 0xf0, 0x0f, 0xc1, 0x07);
	EXPECT(INSN_ATOMIC, "lock xadd %eax,0x0(%r13)", 0xf0, 0x41, 0x0f, 0xc1, 0x45, 0x00);
	EXPECT(INSN_ATOMIC, "lock cmpxchg %rdx,(%rdi)", 0xf0, 0x48, 0x0f, 0xb1, 0x17);
	EXPECT(INSN_ATOMIC, "ds cmpxchg %edx,(%rdi) (LOCK patched out)", 0x3e, 0x0f, 0xb1, 0x17);
	EXPECT(INSN_ATOMIC, "lock incl (%rdi)", 0xf0, 0xff, 0x07);
	EXPECT(INSN_ATOMIC, "lock orb $1,(%rdi)", 0xf0, 0x80, 0x0f, 0x01);
	EXPECT(INSN_ATOMIC, "lock btsl $3,(%rdi)", 0xf0, 0x0f, 0xba, 0x2f, 0x03);
	EXPECT(INSN_ATOMIC, "xchg %eax,(%rdi)", 0x87, 0x07);
	EXPECT(INSN_ATOMIC, "xchg %rax,(%rdi)", 0x48, 0x87, 0x07);
	EXPECT(INSN_OTHER, "xchg %eax,%eax", 0x87, 0xc0);
	EXPECT(INSN_OTHER, "add %eax,(%rdi)", 0x01, 0x07);
	EXPECT(INSN_OTHER, "cmp %eax,(%rdi), prefixed", 0xf0, 0x39, 0x07);
	EXPECT(INSN_OTHER, "ret", 0xc3);
	EXPECT(INSN_OTHER, "jmp *%rax", 0xff, 0xe0);
	EXPECT(INSN_OTHER, "notrack jmp *%rax", 0x3e, 0xff, 0xe0);
	EXPECT(INSN_CALL, "call rel32", 0xe8, 0x01, 0x02, 0x03, 0x04);
	EXPECT(INSN_CALL, "cs call rel32", 0x2e, 0xe8, 0x01, 0x02, 0x03, 0x04);
	EXPECT(INSN_CALL, "call *%r11", 0x41, 0xff, 0xd3);
	EXPECT(INSN_CALL, "notrack call *%rax", 0x3e, 0xff, 0xd0);
	EXPECT(INSN_CALL, "call *0x4030201(%rip)", 0xff, 0x15, 0x01, 0x02, 0x03, 0x04);
	if (failures)
		return 1;
	printf("insn_count: the decoder counts every case as expected\n");
	return 0;
}
