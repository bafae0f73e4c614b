// SPDX-License-Identifier: GPL-2.0
/*
 * C shim of ucma-rs. See ucma_shim.h.
 */
#include <linux/device.h>
#include <linux/fs.h>
#include <linux/kcov.h>
#include <linux/kernel.h>
#include <linux/memcontrol.h>
#include <linux/moduleparam.h>
#include <linux/mutex.h>
#include <linux/namei.h>
#include <linux/nospec.h>
#include <linux/sched.h>
#include <linux/sched/mm.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/sysctl.h>
#include <linux/sysfs.h>
#include <net/net_namespace.h>
#include <rdma/ib.h>
#include <rdma/ib_addr.h>
#include <rdma/ib_sa.h>
#include <rdma/ib_verbs.h>
#include <rdma/rdma_cm.h>
#include <rdma/rdma_user_cm.h>

/*
 * The shims called per command or per event. Where the module's C is linked
 * into the Rust code's bitcode (Kbuild, on a CONFIG_RUST_INLINE_HELPERS
 * kernel) they are always inlined, as the kernel's own helpers are there:
 * LLVM inlines nothing from C into Rust otherwise (see the kernel's
 * rust/helpers/helpers.c). Elsewhere they are plain functions.
 */
#ifdef UCMA_INLINE_INTO_RUST
#define __ucma_shim_hot __always_inline
#else
#define __ucma_shim_hot
#endif

/*
 * struct ib_client_nl_info: the one private ib_core type the client needs.
 * include/rdma/ib_verbs.h only declares it; its definition is in
 * drivers/infiniband/core/core_priv.h, which a kernel headers package does
 * not carry. struct ucma_nl_info has 7.3's fields. Built against a full
 * source tree (Kbuild defines UCMA_HAVE_CORE_PRIV), it is checked against
 * the real definition, field by field; against headers alone, Kbuild
 * builds only for the kernel whose layout was checked so (7.3): writing
 * its fields at assumed offsets into another kernel's struct would corrupt
 * memory.
 */
struct ucma_nl_info {
	struct sk_buff *nl_msg;
	struct device *cdev;
	u32 port;
	u64 abi;
};

#ifdef UCMA_HAVE_CORE_PRIV
#include "core_priv.h"

static_assert(offsetof(struct ib_client_nl_info, nl_msg) ==
	      offsetof(struct ucma_nl_info, nl_msg));
static_assert(offsetof(struct ib_client_nl_info, cdev) ==
	      offsetof(struct ucma_nl_info, cdev));
static_assert(offsetof(struct ib_client_nl_info, port) ==
	      offsetof(struct ucma_nl_info, port));
static_assert(offsetof(struct ib_client_nl_info, abi) ==
	      offsetof(struct ucma_nl_info, abi));
static_assert(sizeof_field(struct ib_client_nl_info, port) ==
	      sizeof_field(struct ucma_nl_info, port));
static_assert(sizeof_field(struct ib_client_nl_info, abi) ==
	      sizeof_field(struct ucma_nl_info, abi));
static_assert(sizeof(struct ib_client_nl_info) == sizeof(struct ucma_nl_info));
#endif

/* The modinfo version (Kbuild passes VERSION's contents). */
MODULE_VERSION(UCMA_RS_VERSION);

#include "ucma_shim.h"

static ssize_t abi_version_show(struct device *dev,
				struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%d\n", RDMA_USER_CM_ABI_VERSION);
}
static DEVICE_ATTR_RO(abi_version);

static struct attribute *ucma_attrs[] = {
	&dev_attr_abi_version.attr,
	NULL,
};
ATTRIBUTE_GROUPS(ucma);

const struct attribute_group **ucma_shim_misc_groups(void)
{
	return ucma_groups;
}

__ucma_shim_hot bool ucma_shim_safe_file_access(struct file *filp)
{
	if (ib_safe_file_access(filp))
		return true;
	/* The C module's message, word for word. */
	pr_err_once("%s: process %d (%s) changed security contexts after opening file descriptor, this is not allowed.\n",
		    "ucma_write", task_tgid_vnr(current), current->comm);
	return false;
}

__ucma_shim_hot struct mem_cgroup *ucma_shim_memcg_get_current(void)
{
	return get_mem_cgroup_from_mm(current->mm);
}

__ucma_shim_hot void ucma_shim_memcg_put(struct mem_cgroup *memcg)
{
	mem_cgroup_put(memcg);
}

__ucma_shim_hot struct mem_cgroup *ucma_shim_set_active_memcg(struct mem_cgroup *memcg)
{
	return set_active_memcg(memcg);
}

void *ucma_shim_memdup_user_account(const void __user *src, size_t len)
{
	gfp_t gfp = GFP_USER | __GFP_ACCOUNT | __GFP_NOWARN;
	void *p;

	/*
	 * Above the costly order the memory cgroup never OOM-kills and the page
	 * allocator gives up early by itself; __GFP_RETRY_MAYFAIL there would
	 * only make a large user-chosen size reclaim and compact harder.
	 */
	if (len <= (PAGE_SIZE << PAGE_ALLOC_COSTLY_ORDER))
		gfp |= __GFP_RETRY_MAYFAIL;
	p = kmalloc(len, gfp);
	if (!p)
		return ERR_PTR(-ENOMEM);
	if (copy_from_user(p, src, len)) {
		kfree(p);
		return ERR_PTR(-EFAULT);
	}
	return p;
}

__ucma_shim_hot u32 ucma_shim_index_nospec(u32 index, u32 size)
{
	return array_index_nospec(index, size);
}

__ucma_shim_hot size_t ucma_shim_kmalloc_max_size(void)
{
	return KMALLOC_MAX_SIZE;
}

bool ucma_shim_misc_name_taken(const char *name)
{
	char buf[64];
	struct path path;

	if (snprintf(buf, sizeof(buf), "/sys/class/misc/%s", name) >= sizeof(buf))
		return false;
	if (kern_path(buf, LOOKUP_FOLLOW, &path))
		return false;
	path_put(&path);
	return true;
}

/*
 * The per-file caps (Documentation/usage.rst), here rather than in the Rust
 * module! macro, whose parameters have no sysfs file: read-only (0444)
 * under /sys/module/ucma_rs/parameters/, as a C module's, set at load time
 * only.
 */
static unsigned int max_ids_per_file = 1048576;
module_param(max_ids_per_file, uint, 0444);
MODULE_PARM_DESC(max_ids_per_file,
		 "Ids one rdma_cm file may hold (CREATE_ID then fails with EMFILE); 0: no limit");
static unsigned int max_events_per_file = 1048576;
module_param(max_events_per_file, uint, 0444);
MODULE_PARM_DESC(max_events_per_file,
		 "Events one rdma_cm file may queue (WRITE_CM_EVENT then fails with ENOBUFS, connect requests are dropped); 0: no limit");

u32 ucma_shim_max_ids_per_file(void)
{
	return READ_ONCE(max_ids_per_file);
}

u32 ucma_shim_max_events_per_file(void)
{
	return READ_ONCE(max_events_per_file);
}

static unsigned int max_backlog = 1024;
static struct ctl_table_header *ucma_ctl_table_hdr;
static const struct ctl_table ucma_ctl_table[] = {
	{
		.procname	= "max_backlog",
		.data		= &max_backlog,
		.maxlen		= sizeof(max_backlog),
		.mode		= 0644,
		.proc_handler	= proc_dointvec_minmax,
		.extra1		= SYSCTL_ZERO,
		.extra2		= SYSCTL_INT_MAX,
	},
};

static DEFINE_MUTEX(ucma_ctl_table_lock);

int ucma_shim_sysctl_register(void)
{
	struct ctl_table_header *hdr;
	int ret = -EBUSY;

	mutex_lock(&ucma_ctl_table_lock);
	if (!ucma_ctl_table_hdr) {
		hdr = register_net_sysctl(&init_net, "net/rdma_ucm", ucma_ctl_table);
		ret = hdr ? 0 : -ENOMEM;
		if (hdr)
			ucma_ctl_table_hdr = hdr;
	}
	mutex_unlock(&ucma_ctl_table_lock);
	return ret;
}

void ucma_shim_sysctl_unregister(void)
{
	mutex_lock(&ucma_ctl_table_lock);
	unregister_net_sysctl_table(ucma_ctl_table_hdr);
	ucma_ctl_table_hdr = NULL;
	mutex_unlock(&ucma_ctl_table_lock);
}

__ucma_shim_hot int ucma_shim_max_backlog(void)
{
	return READ_ONCE(max_backlog);
}

static struct device *ucma_cdev;

static int ucma_get_global_nl_info(struct ib_client_nl_info *res)
{
	struct ucma_nl_info *info = (struct ucma_nl_info *)res;

	info->abi = RDMA_USER_CM_ABI_VERSION;
	info->cdev = ucma_cdev;
	return 0;
}

static struct ib_client rdma_cma_client = {
	.name = "rdma_cm",
	.get_global_nl_info = ucma_get_global_nl_info,
};

static DEFINE_MUTEX(ucma_client_lock);

int ucma_shim_client_register(struct device *cdev)
{
	int ret = -EBUSY;

	mutex_lock(&ucma_client_lock);
	if (!ucma_cdev) {
		ucma_cdev = cdev;
		ret = ib_register_client(&rdma_cma_client);
		if (ret)
			ucma_cdev = NULL;
	}
	mutex_unlock(&ucma_client_lock);
	return ret;
}

void ucma_shim_client_unregister(void)
{
	mutex_lock(&ucma_client_lock);
	if (ucma_cdev) {
		ib_unregister_client(&rdma_cma_client);
		ucma_cdev = NULL;
	}
	mutex_unlock(&ucma_client_lock);
}

__ucma_shim_hot u64 ucma_shim_kcov_common_handle(void)
{
#ifdef CONFIG_KCOV
	return kcov_common_handle().val;
#else
	return 0;
#endif
}

#ifdef CONFIG_KCOV
static bool ucma_kcov_collecting(void)
{
	return (READ_ONCE(current->kcov_mode) & ~KCOV_IN_CTXSW) != KCOV_MODE_DISABLED;
}
#endif

__ucma_shim_hot bool ucma_shim_kcov_remote_start(u64 handle)
{
#ifdef CONFIG_KCOV
#ifdef CONFIG_FAULT_INJECTION
	unsigned int nth;
#endif

	might_sleep();
	/*
	 * kcov_remote_start() warns in a task that collects already (its own
	 * KCOV_ENABLE, or a section around this one): that task's coverage
	 * goes where it goes already.
	 */
	if (!handle || !in_task() || ucma_kcov_collecting())
		return false;
#ifdef CONFIG_FAULT_INJECTION
	/*
	 * A fault armed with fail-nth is for the command, not for kcov's
	 * allocation of the section's buffer: disarmed around it.
	 */
	nth = current->fail_nth;
	current->fail_nth = 0;
#endif
	kcov_remote_start_common((struct kcov_common_handle_id){ .val = handle });
#ifdef CONFIG_FAULT_INJECTION
	current->fail_nth = nth;
#endif
	/* Not collecting: no collector has the handle, or kcov's allocation failed. */
	return ucma_kcov_collecting();
#else
	return false;
#endif
}

__ucma_shim_hot void ucma_shim_kcov_remote_stop(void)
{
	kcov_remote_stop();
}
