/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * notify: the systemd readiness protocol without libsystemd.  When $NOTIFY_SOCKET is set
 * (Type=notify), state lines such as "READY=1" go to it as one datagram; otherwise nothing
 * happens.
 */
#ifndef GUESTD_NOTIFY_H
#define GUESTD_NOTIFY_H

#include <stdint.h>

/* Returns 0 (also when not under systemd) or -errno. */
int notify_send(const char *state);
/* The watchdog period systemd asks this process for (WatchdogSec=), in microseconds: 0 when
 * $WATCHDOG_USEC is unset or malformed, or $WATCHDOG_PID names another process (sd_notify(3)
 * rules: the variables reach the children the daemon spawns too). */
uint64_t notify_watchdog_usec(void);

#endif
