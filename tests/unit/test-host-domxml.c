// SPDX-License-Identifier: LGPL-2.1-or-later
/* dx_parse: hostd's cap record in the domain's metadata, as libvirt writes it back. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "domxml.h"
#include "check.h"

static int parse(const char *xml, struct dx_info *info)
{
    return dx_parse(xml, strlen(xml), info);
}

#define DOM(meta)                                                                                  \
    "<domain type='qemu'><name>vm</name><metadata>" meta "</metadata></domain>"
#define CAP(attrs) "<c:cap xmlns:c='" DX_CAP_URI "' " attrs "/>"

TEST(cap_record_read_back)
{
    struct dx_info info;

    CHECK_INT(parse(DOM(CAP("cpus='0.900' saved_period='50000' saved_quota='150000'")), &info), 0);
    CHECK(info.cap.present);
    CHECK(info.cap.cpus > 0.899 && info.cap.cpus < 0.901);
    CHECK(info.cap.saved_period == 50000);
    CHECK(info.cap.saved_quota == 150000);
    /* "no limit" saved as -1 */
    CHECK_INT(parse(DOM(CAP("cpus='2' saved_period='100000' saved_quota='-1'")), &info), 0);
    CHECK(info.cap.saved_quota == -1);
}

TEST(cap_record_elsewhere_is_not_ours)
{
    struct dx_info info;

    /* no metadata; the same element in another namespace; an administrator's own element */
    CHECK_INT(parse("<domain type='qemu'><name>vm</name></domain>", &info), 0);
    CHECK(!info.cap.present);
    CHECK_INT(parse(DOM("<c:cap xmlns:c='http://example.org/other' cpus='1' saved_period='100000' "
                        "saved_quota='-1'/>"),
                    &info),
              0);
    CHECK(!info.cap.present);
    CHECK_INT(parse(DOM("<p:policy xmlns:p='http://example.org/p' weight='2'/>"), &info), 0);
    CHECK(!info.cap.present);
}

TEST(cap_record_with_bad_numbers_gives_back_no_limit)
{
    static const char *const bad[] = {
        CAP("cpus='1' saved_period='999' saved_quota='150000'"),      /* period below 1 ms */
        CAP("cpus='1' saved_period='1000001' saved_quota='150000'"),  /* above 1 s */
        CAP("cpus='1' saved_period='100000' saved_quota='999'"),      /* quota below 1 ms */
        CAP("cpus='1' saved_period='100000' saved_quota='-2'"),       /* negative, not -1 */
        CAP("cpus='1' saved_period='100000' saved_quota='1.5e5'"),    /* not an integer */
        CAP("cpus='1' saved_period='1e5x' saved_quota='150000'"),     /* trailing garbage */
        CAP("cpus='1' saved_period='100000' saved_quota='17592186044416'"), /* above max */
        CAP("cpus='1' saved_period='100000'"),                        /* quota missing */
    };
    struct dx_info info;

    for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char xml[512];
        snprintf(xml, sizeof(xml), "<domain type='qemu'><metadata>%s</metadata></domain>", bad[i]);
        CHECK_INT(parse(xml, &info), 0);
        CHECK(info.cap.present);
        CHECK(info.cap.saved_period == 100000);
        CHECK(info.cap.saved_quota == -1);
    }
    /* cpus that do not parse: still present, 0 */
    CHECK_INT(parse(DOM(CAP("cpus='lots' saved_period='100000' saved_quota='-1'")), &info), 0);
    CHECK(info.cap.present && info.cap.cpus == 0);
}

