/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * notify: the systemd readiness protocol without libsystemd.  When $NOTIFY_SOCKET is set
 * (Type=notify), state lines such as "READY=1" go to it as one datagram; otherwise nothing
 * happens.
 */
#ifndef GUESTD_NOTIFY_H
#define GUESTD_NOTIFY_H

/* Returns 0 (also when not under systemd) or -errno. */
int notify_send(const char *state);

#endif
