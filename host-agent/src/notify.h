/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * notify: the systemd notification protocol without libsystemd (as chrony does it): one
 * datagram to $NOTIFY_SOCKET per state change.  Silently does nothing outside systemd.
 */
#ifndef HOSTD_NOTIFY_H
#define HOSTD_NOTIFY_H

#include <stdbool.h>
#include <stdint.h>

/* Reads $NOTIFY_SOCKET and $WATCHDOG_USEC (for this process only) and unsets them. */
void notify_init(void);
/* Send "READY=1", "STOPPING=1", "STATUS=..." ...; returns 0, -errno, or 1 when not used. */
int notify_send(const char *state);
/* The watchdog interval systemd asked for, in microseconds; 0 when none. */
uint64_t notify_watchdog_usec(void);

#endif
