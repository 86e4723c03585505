/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* lease: a host hint holds for its lease_ms; any later valid hint renews it.  Timed on
 * CLOCK_BOOTTIME (a timerfd), so time a suspended guest slept counts. */
#ifndef GUESTD_LEASE_H
#define GUESTD_LEASE_H

#include <stdbool.h>
#include <stdint.h>

struct event_base;
struct lease;

typedef void (*lease_expired_fn)(void *ctx);

struct lease *lease_new(struct event_base *base, lease_expired_fn fn, void *ctx);
/* (Re)start the lease for ms milliseconds from now. */
int lease_renew(struct lease *l, uint32_t ms);
void lease_cancel(struct lease *l);
bool lease_held(const struct lease *l);
void lease_free(struct lease *l);

#endif
