/* SPDX-License-Identifier: GPL-2.0 */
/*
 * C shim of ucma-rs: the kernel facilities that are macros, static inlines
 * or static tables, wrapped as plain functions for Rust. The functions are
 * short wrappers (the longest checks a path or registers a table); the
 * module's logic lives in Rust.
 */
#ifndef UCMA_SHIM_H
#define UCMA_SHIM_H

#include <linux/types.h>
#include <rdma/rdma_cm.h>

struct attribute_group;
struct device;
struct file;
struct mem_cgroup;

/**
 * ucma_shim_misc_groups() - sysfs attribute groups of the rdma_cm misc device
 *
 * Return: a NULL-terminated array holding the group with abi_version.
 */
const struct attribute_group **ucma_shim_misc_groups(void);

/**
 * ucma_shim_safe_file_access() - ib_safe_file_access() for Rust
 * @filp: the file being written
 *
 * On failure prints, once per module load, the C module's pr_err_once()
 * message naming the process.
 *
 * Return: true if the caller's credentials are the opener's.
 */
bool ucma_shim_safe_file_access(struct file *filp);

/**
 * ucma_shim_memcg_get_current() - the memory cgroup of the calling process
 *
 * Return: a counted reference (get_mem_cgroup_from_mm() of current's mm),
 * or NULL when the memory controller is disabled. Put with
 * ucma_shim_memcg_put().
 */
struct mem_cgroup *ucma_shim_memcg_get_current(void);
/** ucma_shim_memcg_put() - mem_cgroup_put(@memcg); NULL is allowed */
void ucma_shim_memcg_put(struct mem_cgroup *memcg);
/**
 * ucma_shim_set_active_memcg() - set_active_memcg(@memcg)
 * @memcg: the cgroup __GFP_ACCOUNT allocations are charged to from now on
 *         (NULL: the current task's own), held by the caller meanwhile
 *
 * Return: the previous one, to be set back when the scope ends.
 */
struct mem_cgroup *ucma_shim_set_active_memcg(struct mem_cgroup *memcg);
/**
 * ucma_shim_memdup_user_account() - memdup_user(), charged to the caller
 * @src: user address
 * @len: bytes to copy
 *
 * As memdup_user(), but the buffer is charged to the memory cgroup in
 * effect (__GFP_ACCOUNT), and a cgroup at its limit fails the allocation
 * with -ENOMEM instead of invoking the OOM killer (__GFP_RETRY_MAYFAIL up
 * to the costly order; above it neither happens anyway). Unlike
 * memdup_user(), the buffer comes from the kmalloc-cg caches, not the
 * separate memdup_user buckets of CONFIG_SLAB_BUCKETS, which a module
 * cannot recreate (kmem buckets cannot be destroyed on unload); it lives
 * only for the command.
 *
 * Return: a kmalloc'd copy, or ERR_PTR(-ENOMEM) or ERR_PTR(-EFAULT).
 */
void *ucma_shim_memdup_user_account(const void __user *src, size_t len);

/** ucma_shim_index_nospec() - array_index_nospec(@index, @size) */
u32 ucma_shim_index_nospec(u32 index, u32 size);
/** ucma_shim_kmalloc_max_size() - KMALLOC_MAX_SIZE */
size_t ucma_shim_kmalloc_max_size(void);

/**
 * ucma_shim_misc_name_taken() - whether a misc device of that name exists
 * @name: misc device name (as under /sys/class/misc)
 *
 * Return: true if /sys/class/misc/@name resolves.
 */
bool ucma_shim_misc_name_taken(const char *name);

/**
 * ucma_shim_sysctl_register() - register net.rdma_ucm.max_backlog (init_net)
 *
 * The table is registered at most once at a time: a second call before
 * ucma_shim_sysctl_unregister() fails and leaves the first registration
 * as it was.
 *
 * Return: 0, -EBUSY if the table is registered already, or -ENOMEM.
 */
int ucma_shim_sysctl_register(void);
/**
 * ucma_shim_sysctl_unregister() - undo a successful ucma_shim_sysctl_register()
 *
 * Does nothing if the table is not registered.
 */
void ucma_shim_sysctl_unregister(void);
/** ucma_shim_max_ids_per_file() - the max_ids_per_file parameter (0: no cap) */
u32 ucma_shim_max_ids_per_file(void);
/** ucma_shim_max_events_per_file() - the max_events_per_file parameter (0: no cap) */
u32 ucma_shim_max_events_per_file(void);
/** ucma_shim_max_backlog() - the current net.rdma_ucm.max_backlog */
int ucma_shim_max_backlog(void);

/**
 * ucma_shim_client_register() - register the "rdma_cm" ib_client
 * @cdev: the misc device, reported with ABI 4 to netlink chardev queries
 *
 * The client is registered at most once at a time: a second call before
 * ucma_shim_client_unregister() fails and leaves the first registration
 * as it was.
 *
 * Return: 0, -EBUSY if the client is registered already, or a negative
 * errno from ib_register_client().
 */
int ucma_shim_client_register(struct device *cdev);
/** ucma_shim_client_unregister() - undo ucma_shim_client_register() */
void ucma_shim_client_unregister(void);

/**
 * ucma_shim_kcov_common_handle() - kcov_common_handle() of the current task
 *
 * Return: the KCOV common handle the task inherited from a coverage
 * collector (KCOV_REMOTE_ENABLE, Documentation/dev-tools/kcov.rst), 0 when
 * it has none or the kernel has no CONFIG_KCOV.
 */
u64 ucma_shim_kcov_common_handle(void);
/**
 * ucma_shim_kcov_remote_start() - start a remote coverage section
 * @handle: a handle from ucma_shim_kcov_common_handle(), or 0
 *
 * Starts nothing (and returns false) for handle 0, outside task context,
 * in a task that collects coverage already, when no collector has the
 * handle, or when kcov could not allocate the section's buffer. A fault
 * armed with fail-nth is disarmed around that allocation (it is the
 * command's).
 *
 * Context: task context, may sleep (kcov allocates the section's buffer).
 * Return: true if a section started; end it with
 * ucma_shim_kcov_remote_stop() on the same task.
 */
bool ucma_shim_kcov_remote_start(u64 handle);
/** ucma_shim_kcov_remote_stop() - kcov_remote_stop(): ends the section started on this task */
void ucma_shim_kcov_remote_stop(void);

#endif /* UCMA_SHIM_H */
