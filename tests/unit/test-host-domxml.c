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

#define DOM(meta) "<domain type='qemu'><name>vm</name><metadata>" meta "</metadata></domain>"
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
        CAP("cpus='1' saved_period='999' saved_quota='150000'"),            /* period below 1 ms */
        CAP("cpus='1' saved_period='1000001' saved_quota='150000'"),        /* above 1 s */
        CAP("cpus='1' saved_period='100000' saved_quota='999'"),            /* quota below 1 ms */
        CAP("cpus='1' saved_period='100000' saved_quota='-2'"),             /* negative, not -1 */
        CAP("cpus='1' saved_period='100000' saved_quota='1.5e5'"),          /* not an integer */
        CAP("cpus='1' saved_period='1e5x' saved_quota='150000'"),           /* trailing garbage */
        CAP("cpus='1' saved_period='100000' saved_quota='17592186044416'"), /* above max */
        CAP("cpus='1' saved_period='100000'"),                              /* quota missing */
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

#define POL(attrs) "<corehint:policy xmlns:corehint='" DX_POLICY_URI "' " attrs "/>"

TEST(policy_read_from_metadata)
{
    struct dx_info info;

    /* what `virsh metadata DOM URI --key corehint --set '<policy .../>'` leaves */
    CHECK_INT(parse(DOM(POL("weight='2.5' opt_out='no' actuator='agent-sysfs'")), &info), 0);
    CHECK(info.policy.present);
    CHECK_STR(info.policy.error, "");
    CHECK(info.policy.weight > 2.49 && info.policy.weight < 2.51);
    CHECK_INT(info.policy.opt_out, 0);
    CHECK_INT(info.policy.actuator, 1); /* CFG_ACT_AGENT_SYSFS */
    /* every attribute optional; unset ones say so */
    CHECK_INT(parse(DOM(POL("opt_out='yes'")), &info), 0);
    CHECK(info.policy.present && info.policy.weight == 0);
    CHECK_INT(info.policy.opt_out, 1);
    CHECK_INT(info.policy.actuator, -1);
    CHECK_INT(parse(DOM(POL("")), &info), 0);
    CHECK(info.policy.present && info.policy.weight == 0);
    CHECK_INT(info.policy.opt_out, -1);
    CHECK_STR(info.policy.error, "");
    /* beside hostd's cap record and another namespace's element */
    CHECK_INT(parse(DOM(CAP("cpus='1' saved_period='100000' saved_quota='-1'") "<p:policy "
                                                                               "xmlns:p='http://"
                                                                               "example.org/p' "
                                                                               "weight='9'/>" POL(
                                                                                   "weight='3'")),
                    &info),
              0);
    CHECK(info.cap.present && info.policy.present && info.policy.weight == 3);
}

TEST(policy_absent_or_elsewhere)
{
    struct dx_info info;

    CHECK_INT(parse("<domain type='qemu'><name>vm</name></domain>", &info), 0);
    CHECK(!info.policy.present);
    CHECK_INT(info.policy.opt_out, -1);
    CHECK_INT(info.policy.actuator, -1);
    CHECK_INT(parse(DOM("<p:policy xmlns:p='http://example.org/p' weight='2'/>"), &info), 0);
    CHECK(!info.policy.present);
    /* not a domain XML: the defaults, unset */
    CHECK_INT(parse("<network/>", &info), -EINVAL);
    CHECK(!info.policy.present);
    CHECK_INT(info.policy.opt_out, -1);
}

TEST(policy_invalid_is_ignored_whole_with_a_reason)
{
    static const struct {
        const char *xml, *why;
    } bad[] = {
        {POL("weight='2' wieght='3'"), "unknown attribute \"wieght\""},
        {POL("weight='0'"), "weight: expected a number"},
        {POL("weight='-1'"), "weight: expected a number"},
        {POL("weight='2x'"), "weight: expected a number"},
        {POL("weight='1e7'"), "weight: expected a number"},
        {POL("weight=''"), "weight: expected a number"},
        {POL("weight='3' opt_out='maybe'"), "opt_out"},
        {POL("opt_out='yes' actuator='ssh'"), "actuator: expected channel"},
        {"<corehint:settings xmlns:corehint='" DX_POLICY_URI "' weight='2'/>", "<settings>"},
        /* an attribute value holding a newline and an escape: quoted without either */
        {POL("actuator='x&#10;y&#9;z'"), "not \"x?y?z\""},
        /* non-ASCII quoted as '?' (a cut could split a UTF-8 sequence) */
        {POL("actuator='caf\xc3\xa9'"), "not \"caf??\""},
    };
    struct dx_info info;

    for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char xml[512];
        snprintf(xml, sizeof(xml), "<domain type='qemu'><metadata>%s</metadata></domain>",
                 bad[i].xml);
        CHECK_INT(parse(xml, &info), 0);
        CHECK(info.policy.present);
        if (!strstr(info.policy.error, bad[i].why))
            CHECK_STR(info.policy.error, bad[i].why);
        /* nothing of a bad element is taken, not even its good attributes */
        CHECK(info.policy.weight == 0);
        CHECK_INT(info.policy.opt_out, -1);
        CHECK_INT(info.policy.actuator, -1);
    }
}
