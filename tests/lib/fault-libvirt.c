// SPDX-License-Identifier: LGPL-2.1-or-later
/* LD_PRELOAD fault injection for libvirt clients under test: makes chosen libvirt calls fail
 * the way a busy, dying or restarting libvirtd makes them fail, so that a test can show the
 * daemon survives it.  Knobs (environment, read at each call):
 *   COREHINT_FAULT_XMLDESC_FAILS=N    the first N virDomainGetXMLDesc calls return NULL
 *   COREHINT_FAULT_STATS_CLOSE_AT=N   the Nth virConnectGetAllDomainStats call runs the
 *                                     connection's close callback and then fails, and the
 *                                     connection reports itself dead from then on (what
 *                                     libvirt does when libvirtd goes away during a call)
 *   COREHINT_FAULT_STATS_CLOSE_EVERY=N  the same for every Nth call (a libvirtd that keeps
 *                                     dying during samples)
 *   COREHINT_FAULT_STATS_HANG_AT=N    the Nth virConnectGetAllDomainStats call first sleeps
 *   COREHINT_FAULT_STATS_HANG_MS=M    M ms (a libvirtd that is stopped or stuck on a domain job)
 *   COREHINT_FAULT_CPU_OFFLINE_AFTER=N  from the (N+1)th virNodeGetCPUMap call on, the
 *                                     highest online host CPU is reported offline (an
 *                                     administrator's CPU hot-unplug; not a failure, but said
 *                                     on stderr once like one)
 *   COREHINT_FAULT_QUOTA_FAILS=N      the first N virDomainSetSchedulerParametersFlags calls
 *                                     fail (a quota libvirt cannot set now: a domain job, a
 *                                     busy cgroup), with no libvirt error code: transient
 * Every injected fault is said on stderr ("fault-libvirt: ..."), so a test can tell that it
 * was really met. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <libvirt/libvirt.h>
#include <libvirt/virterror.h>

static unsigned long xmldesc_calls, stats_calls, cpumap_calls, quota_calls;
static virConnectCloseFunc close_cb;
static void *close_opaque;
static virConnectPtr dead_conn;

#define REAL(name)                                                                                 \
    (*(void **)&real_##name = real_##name ? (void *)real_##name : dlsym(RTLD_NEXT, #name))

static unsigned long knob(const char *name)
{
    const char *v = getenv(name);

    return v ? strtoul(v, NULL, 10) : 0;
}

char *virDomainGetXMLDesc(virDomainPtr domain, unsigned int flags)
{
    static char *(*real_virDomainGetXMLDesc)(virDomainPtr, unsigned int);

    if (xmldesc_calls++ < knob("COREHINT_FAULT_XMLDESC_FAILS")) {
        fprintf(stderr, "fault-libvirt: virDomainGetXMLDesc call %lu fails\n", xmldesc_calls);
        return NULL;
    }
    return REAL(virDomainGetXMLDesc) ? real_virDomainGetXMLDesc(domain, flags) : NULL;
}

int virNodeGetCPUMap(virConnectPtr conn, unsigned char **cpumap, unsigned int *online,
                     unsigned int flags)
{
    static int (*real_virNodeGetCPUMap)(virConnectPtr, unsigned char **, unsigned int *,
                                        unsigned int);
    unsigned long after = knob("COREHINT_FAULT_CPU_OFFLINE_AFTER");
    int n, cpu;

    if (!REAL(virNodeGetCPUMap))
        return -1;
    n = real_virNodeGetCPUMap(conn, cpumap, online, flags);
    if (n <= 1 || !after || ++cpumap_calls <= after || !cpumap || !*cpumap)
        return n;
    for (cpu = n - 1; cpu > 0 && !VIR_CPU_USED(*cpumap, cpu); cpu--)
        ;
    if (cpu == 0)
        return n; /* only CPU 0 online: leave it */
    if (cpumap_calls == after + 1)
        fprintf(stderr, "fault-libvirt: host CPU %d offline from virNodeGetCPUMap call %lu\n", cpu,
                cpumap_calls);
    (*cpumap)[cpu / 8] &= (unsigned char)~(1u << (cpu % 8));
    if (online)
        (*online)--;
    return n;
}

/* Remembered, so that a fault can run it; drivers without close callbacks (test:///) are
 * told it worked. */
int virConnectRegisterCloseCallback(virConnectPtr conn, virConnectCloseFunc cb, void *opaque,
                                    virFreeCallback freecb)
{
    static int (*real_virConnectRegisterCloseCallback)(virConnectPtr, virConnectCloseFunc, void *,
                                                       virFreeCallback);

    close_cb = cb;
    close_opaque = opaque;
    if (REAL(virConnectRegisterCloseCallback))
        real_virConnectRegisterCloseCallback(conn, cb, opaque, freecb);
    return 0;
}

int virConnectUnregisterCloseCallback(virConnectPtr conn, virConnectCloseFunc cb)
{
    static int (*real_virConnectUnregisterCloseCallback)(virConnectPtr, virConnectCloseFunc);

    close_cb = NULL;
    if (REAL(virConnectUnregisterCloseCallback))
        real_virConnectUnregisterCloseCallback(conn, cb);
    return 0;
}

int virConnectGetAllDomainStats(virConnectPtr conn, unsigned int stats,
                                virDomainStatsRecordPtr **retStats, unsigned int flags)
{
    static int (*real_virConnectGetAllDomainStats)(virConnectPtr, unsigned int,
                                                   virDomainStatsRecordPtr **, unsigned int);

    if (++stats_calls == knob("COREHINT_FAULT_STATS_HANG_AT")) {
        unsigned long ms = knob("COREHINT_FAULT_STATS_HANG_MS");
        struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
        fprintf(stderr, "fault-libvirt: virConnectGetAllDomainStats call %lu hangs %lu ms\n",
                stats_calls, ms);
        while (nanosleep(&ts, &ts) != 0)
            ;
        fprintf(stderr, "fault-libvirt: virConnectGetAllDomainStats call %lu goes on\n",
                stats_calls);
    }
    unsigned long every = knob("COREHINT_FAULT_STATS_CLOSE_EVERY");
    if (stats_calls == knob("COREHINT_FAULT_STATS_CLOSE_AT") ||
        (every && stats_calls % every == 0)) {
        fprintf(stderr, "fault-libvirt: virConnectGetAllDomainStats call %lu: connection closed\n",
                stats_calls);
        dead_conn = conn;
        if (close_cb)
            close_cb(conn, VIR_CONNECT_CLOSE_REASON_EOF, close_opaque);
        return -1;
    }
    return REAL(virConnectGetAllDomainStats)
               ? real_virConnectGetAllDomainStats(conn, stats, retStats, flags)
               : -1;
}

int virConnectIsAlive(virConnectPtr conn)
{
    static int (*real_virConnectIsAlive)(virConnectPtr);

    if (conn == dead_conn)
        return 0;
    return REAL(virConnectIsAlive) ? real_virConnectIsAlive(conn) : -1;
}

/* A later connection may get the same address. */
int virConnectClose(virConnectPtr conn)
{
    static int (*real_virConnectClose)(virConnectPtr);

    if (conn == dead_conn)
        dead_conn = NULL;
    return REAL(virConnectClose) ? real_virConnectClose(conn) : -1;
}

int virDomainSetSchedulerParametersFlags(virDomainPtr domain, virTypedParameterPtr params,
                                         int nparams, unsigned int flags)
{
    static int (*real_virDomainSetSchedulerParametersFlags)(virDomainPtr, virTypedParameterPtr, int,
                                                            unsigned int);

    if (quota_calls++ < knob("COREHINT_FAULT_QUOTA_FAILS")) {
        fprintf(stderr, "fault-libvirt: virDomainSetSchedulerParametersFlags call %lu fails\n",
                quota_calls);
        virResetLastError();
        return -1;
    }
    return REAL(virDomainSetSchedulerParametersFlags)
               ? real_virDomainSetSchedulerParametersFlags(domain, params, nparams, flags)
               : -1;
}
