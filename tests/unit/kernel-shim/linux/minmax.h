/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Userspace stand-ins for the kernel's typed min/max (see types.h). */
#ifndef CH_KERNEL_SHIM_MINMAX_H
#define CH_KERNEL_SHIM_MINMAX_H

#define max_t(type, x, y) ((type)(x) > (type)(y) ? (type)(x) : (type)(y))
#define min_t(type, x, y) ((type)(x) < (type)(y) ? (type)(x) : (type)(y))

#endif
