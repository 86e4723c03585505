// SPDX-License-Identifier: LGPL-2.1-or-later
/* qemu-ga helpers: base64 of file contents, per-domain actuator settings. */
#include <errno.h>
#include <stdio.h>

#include "check.h"
#include "config.h"
#include "qga.h"

TEST(base64)
{
    char out[64];

    qga_base64((const unsigned char *)"", 0, out);
    CHECK_STR(out, "");
    qga_base64((const unsigned char *)"0\n", 2, out);
    CHECK_STR(out, "MAo=");
    qga_base64((const unsigned char *)"0-3\n", 4, out);
    CHECK_STR(out, "MC0zCg==");
    qga_base64((const unsigned char *)"0,2-5", 5, out);
    CHECK_STR(out, "MCwyLTU=");
    qga_base64((const unsigned char *)"\xff\x00\x80", 3, out);
    CHECK_STR(out, "/wCA");
}

TEST(actuator_setting)
{
    struct hd_config c;
    char err[256];

    cfg_defaults(&c);
    CHECK_INT(cfg_load_text(&c, "t.conf",
                            "[domain a]\nactuator = agent-vcpus\n[domain b]\n"
                            "weight = 2\n",
                            err, sizeof(err)),
              0);
    CHECK_INT(cfg_domain_find(&c, "a", "")->actuator, CFG_ACT_AGENT_VCPUS);
    CHECK_INT(cfg_domain_find(&c, "b", "")->actuator, CFG_ACT_CHANNEL);
    CHECK_STR(cfg_actuator_name(CFG_ACT_AGENT_SYSFS), "agent-sysfs");
    CHECK_INT(cfg_load_text(&c, "t.conf", "[domain a]\nactuator = telepathy\n", err, sizeof(err)),
              -EINVAL);
    CHECK_STR(err, "t.conf:2: actuator: expected channel, agent-sysfs or agent-vcpus, not "
                   "\"telepathy\"");
    cfg_free(&c);
}
