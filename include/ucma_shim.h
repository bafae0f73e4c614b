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
struct ib_device;
struct mem_cgroup;
struct rdma_dev_addr;
struct sa_path_rec;
struct sockaddr;
union ib_gid;

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
 * ucma_shim_create_kernel_id() - rdma_create_id() for Rust
 * @net: the network namespace of the id (the id takes its own reference)
 * @event_handler: the id's event handler
 * @context: the id's context
 * @ps: its port space
 * @qp_type: its QP type
 *
 * rdma_create_id() is a macro that names the caller by KBUILD_MODNAME.
 *
 * Return: the new kernel id, or rdma_create_id()'s error.
 */
struct rdma_cm_id *ucma_shim_create_kernel_id(struct net *net,
					      rdma_cm_event_handler event_handler,
					      void *context, enum rdma_ucm_port_space ps,
					      enum ib_qp_type qp_type);

/**
 * ucma_shim_create_user_id() - rdma_create_user_id(), in any task context
 * @event_handler: the id's event handler
 * @context: the id's context
 * @ps: its port space
 * @qp_type: its QP type
 *
 * rdma_create_user_id() takes the calling task's network namespace through
 * current->nsproxy, which an exiting task has cleared already when it
 * closes the files it left open (exit_task_namespaces() runs before
 * exit_task_work()).
 *
 * Return: the new id, or ERR_PTR(-ESRCH) if the calling task has no
 * namespaces any more, or rdma_create_user_id()'s error.
 */
struct rdma_cm_id *ucma_shim_create_user_id(rdma_cm_event_handler event_handler,
					    void *context, enum rdma_ucm_port_space ps,
					    enum ib_qp_type qp_type);

/**
 * ucma_shim_copy_service_recs() - copy an id's resolved service records
 * @id: the id
 * @out: room for @room records
 * @room: how many records @out holds
 *
 * Copies min(@room, the id's count) records. The records of an id are set
 * once, by rdma_resolve_ib_service()'s SA callback, and freed only when the
 * id is destroyed. That callback publishes the pointer and the count
 * before it copies the records in, with no lock a reader could take: a
 * copy racing it may read bytes not yet written, as C's QUERY does. The
 * race stays here, in C, as a plain read like ucma.c's.
 *
 * Return: the id's count of records (clamped to INT_MAX), or -ENODATA when
 * none was resolved.
 */
int ucma_shim_copy_service_recs(struct rdma_cm_id *id, void *out, size_t room);

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

/** ucma_shim_node_guid() - @dev's node GUID, in network byte order */
u64 ucma_shim_node_guid(struct ib_device *dev);
/** ucma_shim_dev_index() - @dev's index */
u32 ucma_shim_dev_index(struct ib_device *dev);
/** ucma_shim_cap_ib_sa() - rdma_cap_ib_sa() */
bool ucma_shim_cap_ib_sa(struct ib_device *dev, u32 port);
/** ucma_shim_cap_opa_ah() - rdma_cap_opa_ah() */
bool ucma_shim_cap_opa_ah(struct ib_device *dev, u32 port);
/** ucma_shim_protocol_roce() - rdma_protocol_roce() */
bool ucma_shim_protocol_roce(struct ib_device *dev, u32 port);
/** ucma_shim_protocol_iwarp() - rdma_protocol_iwarp() */
bool ucma_shim_protocol_iwarp(struct ib_device *dev, u32 port);
/** ucma_shim_addr_get_sgid() - rdma_addr_get_sgid() */
void ucma_shim_addr_get_sgid(struct rdma_dev_addr *dev_addr, union ib_gid *gid);
/** ucma_shim_addr_get_dgid() - rdma_addr_get_dgid() */
void ucma_shim_addr_get_dgid(struct rdma_dev_addr *dev_addr, union ib_gid *gid);
/** ucma_shim_addr_get_pkey() - ib_addr_get_pkey() */
u16 ucma_shim_addr_get_pkey(struct rdma_dev_addr *dev_addr);
/** ucma_shim_ip2gid() - rdma_ip2gid() */
void ucma_shim_ip2gid(struct sockaddr *addr, union ib_gid *gid);
/** ucma_shim_path_opa_to_ib() - sa_convert_path_opa_to_ib() */
void ucma_shim_path_opa_to_ib(struct sa_path_rec *dest, struct sa_path_rec *src);
/** ucma_shim_path_ib_to_opa() - sa_convert_path_ib_to_opa() */
void ucma_shim_path_ib_to_opa(struct sa_path_rec *dest, struct sa_path_rec *src);

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
