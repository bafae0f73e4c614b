// SPDX-License-Identifier: GPL-2.0
/*
 * Test-only module: emits one WARNING on load and nothing else. The VM
 * tier loads it to check that scripts/vm-run fails a run whose kernel log
 * has a splat even though the command itself succeeded.
 */
#include <linux/bug.h>
#include <linux/module.h>

static int __init ucma_splat_test_init(void)
{
	WARN(1, "ucma_splat_test: deliberate warning\n");
	return 0;
}

static void __exit ucma_splat_test_exit(void)
{
}

module_init(ucma_splat_test_init);
module_exit(ucma_splat_test_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("ucma-rs: deliberate WARNING for the splat-gate test");
