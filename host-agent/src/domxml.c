// SPDX-License-Identifier: LGPL-2.1-or-later
#include "domxml.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libxml/parser.h>
#include <libxml/xpath.h>

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

int dx_parse(const char *xml, size_t len, struct dx_info *info)
{
    xmlDocPtr doc = NULL;
    xmlXPathContextPtr ctx = NULL;
    xmlChar *path = NULL;
    int rc = -EINVAL;

    memset(info, 0, sizeof(*info));
    info->threads = 1;
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
    rc = 0;

cleanup:
    xmlFree(path);
    xmlXPathFreeContext(ctx);
    xmlFreeDoc(doc);
    return rc;
}
