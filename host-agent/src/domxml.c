// SPDX-License-Identifier: LGPL-2.1-or-later
#include "domxml.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libxml/parser.h>
#include <libxml/xpath.h>

#include "config.h"
#include "corehint/conf.h"
#include "corehint/proto.h"

/* The string value of an XPath expression, or NULL; caller frees with xmlFree. */
static xmlChar *xpath_string(xmlXPathContextPtr ctx, const char *expr)
{
    xmlXPathObjectPtr o = xmlXPathEvalExpression((const xmlChar *)expr, ctx);
    xmlChar *s = NULL;

    if (o && o->type == XPATH_NODESET && o->nodesetval && o->nodesetval->nodeNr > 0)
        s = xmlNodeGetContent(o->nodesetval->nodeTab[0]);
    xmlXPathFreeObject(o);
    return s;
}

static unsigned xpath_uint(xmlXPathContextPtr ctx, const char *expr, unsigned dflt, unsigned max)
{
    xmlChar *s = xpath_string(ctx, expr);
    unsigned long v;
    char *end;

    if (!s)
        return dflt;
    errno = 0;
    v = strtoul((const char *)s, &end, 10);
    if (errno || end == (char *)s || *end != '\0' || v > max)
        v = dflt;
    xmlFree(s);
    return (unsigned)v;
}

/* A number in [lo, hi] from the whole string s, or false. */
static bool parse_num(const xmlChar *s, double lo, double hi, double *out)
{
    char *end;

    if (!s)
        return false;
    errno = 0;
    *out = strtod((const char *)s, &end);
    return !errno && end != (const char *)s && *end == '\0' && *out >= lo && *out <= hi;
}

/* A decimal integer in [lo, hi] from the whole string s, or false. */
static bool parse_int(const xmlChar *s, long long lo, long long hi, long long *out)
{
    char *end;

    if (!s)
        return false;
    errno = 0;
    *out = strtoll((const char *)s, &end, 10);
    return !errno && end != (const char *)s && *end == '\0' && *out >= lo && *out <= hi;
}

#define CAP_XPATH "/domain/metadata/*[local-name()='cap'][namespace-uri()='" DX_CAP_URI "']/@"

/* hostd's cap record.  Written by hostd, but read as untrusted like the rest: a record with
 * bad numbers still says a cap was set, with no administrator's quota to give back. */
static void parse_cap(xmlXPathContextPtr ctx, struct dx_cap *cap)
{
    xmlChar *cpus = xpath_string(ctx, CAP_XPATH "cpus");
    xmlChar *period = xpath_string(ctx, CAP_XPATH "saved_period");
    xmlChar *quota = xpath_string(ctx, CAP_XPATH "saved_quota");
    double c;
    long long p, q;

    cap->present = cpus != NULL;
    cap->cpus = parse_num(cpus, 0.001, 65536, &c) ? c : 0;
    cap->saved_period = 100000;
    cap->saved_quota = -1;
    /* libvirt's ranges: period 1 ms .. 1 s, quota 1 ms .. 17592186044415 us, or no limit */
    if (parse_int(period, 1000, 1000000, &p) && parse_int(quota, -1, 17592186044415LL, &q) &&
        (q == -1 || q >= 1000)) {
        cap->saved_period = (unsigned long long)p;
        cap->saved_quota = (long long)q;
    }
    xmlFree(cpus);
    xmlFree(period);
    xmlFree(quota);
}

/* One attribute of the policy element into p; false with p->error set when it is invalid. */
static bool policy_attr(struct snap_policy *p, const char *key, const char *value)
{
    double w;

    if (strcmp(key, "weight") == 0) {
        if (!parse_num((const xmlChar *)value, 0.001, 1e6, &w)) {
            snprintf(p->error, sizeof(p->error),
                     "weight: expected a number from 0.001 to 1e6, not \"%.40s\"", value);
            return false;
        }
        p->weight = w;
        return true;
    }
    if (strcmp(key, "opt_out") == 0) {
        bool b;
        if (ch_conf_bool(key, value, &b, p->error, sizeof(p->error)) < 0)
            return false;
        p->opt_out = b;
        return true;
    }
    if (strcmp(key, "actuator") == 0) {
        int a = cfg_actuator_parse(value);
        if (a >= 0) {
            p->actuator = (signed char)a;
            return true;
        }
        snprintf(p->error, sizeof(p->error),
                 "actuator: expected channel, agent-sysfs or agent-vcpus, not \"%.40s\"", value);
        return false;
    }
    snprintf(p->error, sizeof(p->error), "unknown attribute \"%.40s\" (weight, opt_out, actuator)",
             key);
    return false;
}

/* The administrator's per-VM policy element, if any: all of it, or none of it. */
static void parse_policy(xmlXPathContextPtr ctx, struct snap_policy *p)
{
    xmlXPathObjectPtr o = xmlXPathEvalExpression(
        (const xmlChar *)"/domain/metadata/*[namespace-uri()='" DX_POLICY_URI "']", ctx);
    xmlNodePtr node;

    memset(p, 0, sizeof(*p));
    p->opt_out = -1;
    p->actuator = -1;
    if (!o || o->type != XPATH_NODESET || !o->nodesetval || o->nodesetval->nodeNr == 0)
        goto out;
    node = o->nodesetval->nodeTab[0];
    p->present = true;
    if (strcmp((const char *)node->name, "policy") != 0) {
        snprintf(p->error, sizeof(p->error), "element <%.40s>: expected <policy>",
                 (const char *)node->name);
    } else {
        for (xmlAttrPtr a = node->properties; a; a = a->next) {
            xmlChar *v = xmlNodeListGetString(node->doc, a->children, 1);
            bool ok = policy_attr(p, (const char *)a->name, v ? (const char *)v : "");
            xmlFree(v);
            if (!ok)
                break;
        }
    }
    /* The reason quotes the administrator's text: no control character reaches the log, and
     * no non-ASCII byte (a cut may split a UTF-8 sequence; /status and traces are JSON). */
    for (char *c = p->error; *c; c++)
        if ((unsigned char)*c < 0x20 || (unsigned char)*c >= 0x7f)
            *c = '?';
    if (p->error[0]) { /* ignored as a whole: the defaults apply */
        p->weight = 0;
        p->opt_out = -1;
        p->actuator = -1;
    }
out:
    xmlXPathFreeObject(o);
}

int dx_parse(const char *xml, size_t len, struct dx_info *info)
{
    xmlDocPtr doc = NULL;
    xmlXPathContextPtr ctx = NULL;
    xmlChar *path = NULL;
    int rc = -EINVAL;

    memset(info, 0, sizeof(*info));
    info->threads = 1;
    info->policy.opt_out = -1;
    info->policy.actuator = -1;
    if (len > INT_MAX)
        return -EINVAL;
    doc = xmlReadMemory(xml, (int)len, "domain.xml", NULL,
                        XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING);
    if (!doc || !xmlDocGetRootElement(doc) ||
        strcmp((const char *)xmlDocGetRootElement(doc)->name, "domain") != 0)
        goto cleanup;
    if (!(ctx = xmlXPathNewContext(doc)))
        goto cleanup;
    info->threads = xpath_uint(ctx, "/domain/cpu/topology/@threads", 1, 64);
    if (info->threads == 0)
        info->threads = 1;
    info->shares = xpath_uint(ctx, "/domain/cputune/shares", 0, 262144);
    path = xpath_string(ctx, "/domain/devices/channel[@type='unix']"
                             "[target/@type='virtio'][target/@name='" CH_PORT_NAME "']"
                             "/source/@path");
    if (path && strlen((const char *)path) < sizeof(info->channel))
        snprintf(info->channel, sizeof(info->channel), "%s", (const char *)path);
    parse_cap(ctx, &info->cap);
    parse_policy(ctx, &info->policy);
    rc = 0;

cleanup:
    xmlFree(path);
    xmlXPathFreeContext(ctx);
    xmlFreeDoc(doc);
    return rc;
}
