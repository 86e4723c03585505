// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * chbench: the guest workloads of corehint's benchmarks, statically linked into the guest image.
 *
 *   chbench msg [-g GROUPS] [-f FDS] [-l LOOPS]
 *       hackbench-style: each group has FDS sender and FDS receiver threads; every sender
 *       writes LOOPS 100-byte messages to each receiver of its group over a pipe.  Prints the
 *       wall time for the whole exchange.  Wakeups and pipe locks make it sensitive to vCPU
 *       preemption.
 *   chbench cpu [-t THREADS] [-s SECONDS]
 *       CPU-bound throughput: THREADS threads run a fixed arithmetic kernel; prints operations
 *       per second.
 *   chbench spin FILE
 *       The background load of the benchmark guests, counted: runs the arithmetic kernel
 *       forever and every 0.1 s replaces FILE with the millions of operations done so far, so
 *       the work a mode left the background is measured, not only the workload's time.
 *
 * Output is one line "CHBENCH <mode> key=value ..." so the host harness can grep it.
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MSG_SIZE 100

static double now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static _Noreturn void die(const char *what)
{
    fprintf(stderr, "chbench: %s: %s\n", what, strerror(errno));
    exit(1);
}

struct pipe_end {
    int fd;
    unsigned loops;
    unsigned peers; /* receivers: how many senders write to this pipe */
    int *out;       /* senders: the write ends of their group's receivers */
    unsigned nout;
};

static void *sender(void *arg)
{
    struct pipe_end *p = arg;
    char msg[MSG_SIZE];

    memset(msg, 's', sizeof(msg));
    for (unsigned l = 0; l < p->loops; l++)
        for (unsigned r = 0; r < p->nout; r++)
            for (size_t done = 0; done < sizeof(msg);) {
                ssize_t n = write(p->out[r], msg + done, sizeof(msg) - done);
                if (n < 0 && errno != EINTR)
                    die("write");
                if (n > 0)
                    done += (size_t)n;
            }
    return NULL;
}

static void *receiver(void *arg)
{
    struct pipe_end *p = arg;
    char buf[MSG_SIZE * 4];
    size_t want = (size_t)p->loops * p->peers * MSG_SIZE;

    while (want > 0) {
        ssize_t n = read(p->fd, buf, want < sizeof(buf) ? want : sizeof(buf));
        if (n < 0 && errno != EINTR)
            die("read");
        if (n == 0) {
            fprintf(stderr, "chbench: early EOF\n");
            exit(1);
        }
        if (n > 0)
            want -= (size_t)n;
    }
    return NULL;
}

static int run_msg(unsigned groups, unsigned fds, unsigned loops)
{
    size_t n = (size_t)groups * fds;
    pthread_t *th = calloc(2 * n, sizeof(*th));
    struct pipe_end *rx = calloc(n, sizeof(*rx)), *tx = calloc(n, sizeof(*tx));
    int *wfd = calloc(n, sizeof(*wfd));

    if (!th || !rx || !tx || !wfd)
        die("calloc");
    for (size_t i = 0; i < n; i++) {
        int p[2];
        if (pipe(p) < 0)
            die("pipe");
        rx[i] = (struct pipe_end){.fd = p[0], .loops = loops, .peers = fds};
        wfd[i] = p[1];
    }
    for (size_t g = 0; g < groups; g++)
        for (size_t s = 0; s < fds; s++)
            tx[g * fds + s] = (struct pipe_end){.loops = loops, .out = wfd + g * fds, .nout = fds};

    double t0 = now();
    for (size_t i = 0; i < n; i++)
        if (pthread_create(&th[i], NULL, receiver, &rx[i]) != 0)
            die("pthread_create");
    for (size_t i = 0; i < n; i++)
        if (pthread_create(&th[n + i], NULL, sender, &tx[i]) != 0)
            die("pthread_create");
    for (size_t i = 0; i < 2 * n; i++)
        pthread_join(th[i], NULL);
    double t = now() - t0;

    printf("CHBENCH msg groups=%u fds=%u loops=%u seconds=%.3f\n", groups, fds, loops, t);
    for (size_t i = 0; i < n; i++) {
        close(rx[i].fd);
        close(wfd[i]);
    }
    free(th);
    free(rx);
    free(tx);
    free(wfd);
    return 0;
}

struct cpu_arg {
    double until;
    uint64_t ops;
};

static void *cpu_worker(void *arg)
{
    struct cpu_arg *a = arg;
    uint64_t x = 88172645463325252u, ops = 0;

    while (now() < a->until) {
        for (int i = 0; i < 100000; i++) { /* xorshift: no memory traffic, no syscalls */
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
        }
        ops += 100000;
    }
    a->ops = ops + (x & 1); /* keep x alive */
    return NULL;
}

static int run_cpu(unsigned threads, double seconds)
{
    pthread_t *th = calloc(threads, sizeof(*th));
    struct cpu_arg *args = calloc(threads, sizeof(*args));
    uint64_t total = 0;

    if (!th || !args)
        die("calloc");
    double t0 = now();
    for (unsigned i = 0; i < threads; i++) {
        args[i].until = t0 + seconds;
        if (pthread_create(&th[i], NULL, cpu_worker, &args[i]) != 0)
            die("pthread_create");
    }
    for (unsigned i = 0; i < threads; i++) {
        pthread_join(th[i], NULL);
        total += args[i].ops;
    }
    double t = now() - t0;
    printf("CHBENCH cpu threads=%u seconds=%.3f ops_per_s=%.0f\n", threads, t, (double)total / t);
    free(th);
    free(args);
    return 0;
}

static unsigned arg_uint(const char *s, unsigned min, unsigned max, const char *what)
{
    char *end;
    unsigned long v = strtoul(s, &end, 10);

    if (*s == '\0' || *end != '\0' || v < min || v > max) {
        fprintf(stderr, "chbench: %s must be %u..%u\n", what, min, max);
        exit(2);
    }
    return (unsigned)v;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: chbench msg [-g GROUPS] [-f FDS] [-l LOOPS]\n"
               "       chbench cpu [-t THREADS] [-s SECONDS]\n"
               "       chbench spin FILE\n");
}

/*
 * Never returns (exits on an error).  The count is written to a hidden file beside FILE and
 * renamed over it, so a reader sees a whole number, old or new (rewritten in place, a reader
 * racing the write was seen to get a torn one).
 */
static _Noreturn void run_spin(const char *path)
{
    char tmp[4096];
    const char *slash = strrchr(path, '/');
    int dirlen = slash ? (int)(slash - path + 1) : 0;
    volatile uint64_t x = 1;
    uint64_t mops = 0;
    double next = now();

    if (snprintf(tmp, sizeof(tmp), "%.*s.%s.tmp", dirlen, path, path + dirlen) >=
        (int)sizeof(tmp)) {
        errno = ENAMETOOLONG;
        die(path);
    }
    for (;;) {
        if (now() >= next) {
            FILE *f = fopen(tmp, "w");
            if (!f || fprintf(f, "%llu\n", (unsigned long long)mops) < 0 || fclose(f) != 0 ||
                rename(tmp, path) < 0)
                die(tmp);
            next = now() + 0.1;
        }
        for (unsigned i = 0; i < 1000000; i++)
            x = x * 6364136223846793005ULL + 1442695040888963407ULL;
        mops++;
    }
}

int main(int argc, char **argv)
{
    int opt;

    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        usage(stdout);
        return 0;
    }
    const char *mode = argv[1];
    optind = 2;
    if (strcmp(mode, "msg") == 0) {
        unsigned g = 4, f = 10, l = 100;
        while ((opt = getopt(argc, argv, "g:f:l:")) != -1) {
            switch (opt) {
            case 'g':
                g = arg_uint(optarg, 1, 100, "GROUPS");
                break;
            case 'f':
                f = arg_uint(optarg, 1, 100, "FDS");
                break;
            case 'l':
                l = arg_uint(optarg, 1, 1000000, "LOOPS");
                break;
            default:
                usage(stderr);
                return 2;
            }
        }
        return run_msg(g, f, l);
    }
    if (strcmp(mode, "cpu") == 0) {
        unsigned t = (unsigned)sysconf(_SC_NPROCESSORS_ONLN), s = 5;
        while ((opt = getopt(argc, argv, "t:s:")) != -1) {
            switch (opt) {
            case 't':
                t = arg_uint(optarg, 1, 1024, "THREADS");
                break;
            case 's':
                s = arg_uint(optarg, 1, 3600, "SECONDS");
                break;
            default:
                usage(stderr);
                return 2;
            }
        }
        return run_cpu(t, s);
    }
    if (strcmp(mode, "spin") == 0 && argc == 3)
        run_spin(argv[2]);
    usage(stderr);
    return 2;
}
