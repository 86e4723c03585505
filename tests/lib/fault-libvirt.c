// SPDX-License-Identifier: LGPL-2.1-or-later
/* LD_PRELOAD fault injection for libvirt clients under test: makes chosen libvirt calls fail
 * the way a busy or restarting libvirtd makes them fail, so that a test can show the daemon
 * survives it.  Knobs (environment, read at each call):
 *   COREHINT_FAULT_XMLDESC_FAILS=N   the first N virDomainGetXMLDesc calls return NULL
 * Every injected failure is said on stderr ("fault-libvirt: ..."), so a test can tell that
 * the fault was really met. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

#include <libvirt/libvirt.h>

static unsigned long xmldesc_calls;

char *virDomainGetXMLDesc(virDomainPtr domain, unsigned int flags)
{
    static char *(*real)(virDomainPtr, unsigned int);
    const char *fails = getenv("COREHINT_FAULT_XMLDESC_FAILS");

    if (!real)
        *(void **)&real = dlsym(RTLD_NEXT, "virDomainGetXMLDesc");
    if (fails && xmldesc_calls++ < strtoul(fails, NULL, 10)) {
        fprintf(stderr, "fault-libvirt: virDomainGetXMLDesc call %lu fails\n", xmldesc_calls);
        return NULL;
    }
    return real ? real(domain, flags) : NULL;
}
