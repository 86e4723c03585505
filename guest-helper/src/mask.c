// SPDX-License-Identifier: LGPL-2.1-or-later
#include "mask.h"

#include <errno.h>
#include <string.h>

#include "corehint/log.h"

void mask_close(struct mask_backend *m)
{
    if (m->ops)
        m->ops->close(m->ctx);
    m->ops = NULL;
    m->ctx = NULL;
}

int mask_restore(const struct mask_backend *m)
{
    struct mask_probe p;
    int rc;

    mask_probe(m, &p);
    if (!p.supported) {
        log_msg(LOG_LVL_INFO, "%s does not exist: nothing to restore", mask_where(m));
        return 0;
    }
    if (!p.writable) {
        /* a request may stand that we cannot clear: that is a failure, not "nothing to do" */
        log_msg(LOG_LVL_ERR, "cannot restore %s: %s", mask_where(m),
                p.reason[0] ? p.reason : "not writable");
        return -EACCES;
    }
    rc = mask_release(m);
    if (rc == -EBUSY) {
        /* The owner's claim ended any request of ours, and its release at unload gives every
         * CPU back: there is nothing left for us to clear, and nothing we may write. */
        log_msg(LOG_LVL_INFO,
                "%s is owned by %s (EBUSY): it makes every CPU preferred again when it is "
                "unloaded; nothing to restore",
                mask_where(m), p.owner[0] ? p.owner : "an in-kernel policy");
        return 0;
    }
    if (rc < 0) {
        log_msg(LOG_LVL_ERR, "cannot restore %s: %s", mask_where(m),
                rc == -EIO ? "read back a different set" : strerror(-rc));
        return rc;
    }
    log_msg(LOG_LVL_INFO, "restored every online CPU as preferred");
    return 0;
}
