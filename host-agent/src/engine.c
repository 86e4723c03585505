// SPDX-License-Identifier: LGPL-2.1-or-later
#include "engine.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "corehint/log.h"
#include "record.h"
#include "report.h"

void eng_init(struct engine *e, const struct hd_config *cfg, FILE *record)
{
    memset(e, 0, sizeof(*e));
    e->cfg = cfg;
    e->record = record;
}

void eng_reset(struct engine *e)
{
    snap_free(e->prev);
    e->prev = NULL;
}

static const struct pol_decision *dec_find(const struct pol_decision *d, unsigned n,
                                           const char *uuid)
{
    return hd_find_uuid(d, n, sizeof(*d), offsetof(struct pol_decision, uuid), uuid);
}

/* Log every decision (changes at info level); returns how many preferred sets changed. */
static unsigned log_changes(const struct engine *e, const struct pol_decision *old, unsigned nold)
{
    unsigned nchanged = 0;

    for (unsigned i = 0; i < e->ndec; i++) {
        const struct pol_decision *d = &e->dec[i];
        const struct model_dom *md = &e->model.dom[i];
        const struct pol_decision *p = dec_find(old, nold, d->uuid);
        char list[CH_CPULIST_MAX_LEN];
        bool changed = !p || !ch_cpuset_equal(&p->preferred, &d->preferred);

        nchanged += p && changed;
        if (p && p->non_compliant != d->non_compliant)
            log_msg(LOG_LVL_WARN, "%s is %s compliant with its hint", md->name,
                    d->non_compliant ? "no longer" : "again");
        if (!changed && !log_enabled(LOG_LVL_DEBUG))
            continue;
        if (ch_cpulist_format(&d->preferred, list, sizeof(list)) < 0)
            list[0] = '\0';
        log_msg(changed ? LOG_LVL_INFO : LOG_LVL_DEBUG,
                "%s%s: preferred %s (%u of %u vCPUs, %s), demand %.2f, entitlement %.2f%s%s%s",
                e->cfg->dry_run ? "dry-run: " : "", md->name, list, d->count, d->nvcpu,
                pol_reason_name(d->reason), d->demand, d->entitlement,
                d->censored ? ", censored" : "", d->claimed ? ", claimed its fair share" : "",
                d->non_compliant ? ", NON-COMPLIANT" : "");
    }
    return nchanged;
}

int eng_feed(struct engine *e, struct snapshot *s, unsigned gen)
{
    struct pol_decision *dec;
    struct model m;
    uint64_t t0;
    int rc;

    if (e->record) {
        char *line = rec_format(s);
        if (line && (fputs(line, e->record) < 0 || fflush(e->record) != 0))
            log_msg(LOG_LVL_WARN, "cannot write the record file: %s", strerror(errno));
        free(line);
    }
    if (e->prev && e->prev_gen != gen)
        eng_reset(e);
    if (!e->prev) {
        e->prev = s;
        e->prev_gen = gen;
        return 0;
    }
    rc = model_build(&m, e->prev, s);
    if (rc < 0) {
        log_msg(LOG_LVL_WARN, "sample at %llu ns does not follow the previous one; skipped",
                (unsigned long long)s->t_ns);
        snap_free(s);
        return rc == -EINVAL ? 0 : rc;
    }
    if (!(dec = calloc(m.ndom + 1, sizeof(*dec)))) {
        model_free(&m);
        snap_free(s);
        return -ENOMEM;
    }
    t0 = hd_mono_ns();
    rc = pol_step(&m, e->cfg, e->dec, e->ndec, dec);
    e->last_step_ns = hd_mono_ns() - t0;
    if (rc < 0) {
        free(dec);
        model_free(&m);
        snap_free(s);
        return rc;
    }
    struct pol_decision *old = e->dec;
    unsigned nold = e->ndec;
    model_free(&e->model);
    e->model = m;
    e->dec = dec;
    e->ndec = m.ndom;
    e->decided = true;
    e->steps++;
    e->changes += log_changes(e, old, nold);
    free(old);
    snap_free(e->prev);
    e->prev = s;
    e->prev_gen = gen;
    return 1;
}

bool eng_too_soon(const struct engine *e, const struct snapshot *s, unsigned gen)
{
    return e->prev && e->prev_gen == gen && s->t_ns > e->prev->t_ns &&
           s->t_ns - e->prev->t_ns < (uint64_t)e->cfg->interval_ms * 1000000u / 2;
}

json_object *eng_report(const struct engine *e)
{
    return e->decided ? rep_build(&e->model, e->dec, e->cfg) : NULL;
}

void eng_finalise(struct engine *e)
{
    eng_reset(e);
    model_free(&e->model);
    free(e->dec);
    e->dec = NULL;
    e->ndec = 0;
}
