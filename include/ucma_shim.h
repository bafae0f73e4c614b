/* SPDX-License-Identifier: GPL-2.0 */
/*
 * C shim of ucma-rs: the few kernel facilities that are macros, static
 * inlines or macro-built tables, wrapped as plain functions for Rust.
 * Each function is a one-liner; all logic lives in Rust.
 */
#ifndef UCMA_SHIM_H
#define UCMA_SHIM_H

#include <linux/types.h>

struct attribute_group;
struct file;

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
 * Return: true if the caller's credentials are the opener's.
 */
bool ucma_shim_safe_file_access(struct file *filp);

/**
 * ucma_shim_misc_name_taken() - whether a misc device of that name exists
 * @name: misc device name (as under /sys/class/misc)
 *
 * Return: true if /sys/class/misc/@name resolves.
 */
bool ucma_shim_misc_name_taken(const char *name);

#endif /* UCMA_SHIM_H */
