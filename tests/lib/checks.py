"""The check helper of the Python tests that go on after a failed check: check() prints and
records a failure, finish() reports the count and exits non-zero when any check failed, or
when no check ran at all (a test whose loops found nothing to check proves nothing)."""
import sys

failures = []
ran = 0


def check(cond, what):
    """Record `what` as failed unless cond; returns cond as a bool."""
    global ran
    ran += 1
    if not cond:
        failures.append(what)
        print("FAIL:", what)
    return bool(cond)


def finish():
    """End the test: 'ok' with the number of checks, or the number of failed checks (or 'no
    check ran') and exit status 1."""
    if failures:
        print(f"{len(failures)} of {ran} check(s) failed")
        sys.exit(1)
    if not ran:
        print("FAIL: no check ran")
        sys.exit(1)
    print(f"ok ({ran} checks)")
    sys.exit(0)
