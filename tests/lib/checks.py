"""The check helper of the Python tests that go on after a failed check: check() prints and
records a failure, finish() reports the count and exits non-zero when any check failed."""
import sys

failures = []


def check(cond, what):
    """Record `what` as failed unless cond; returns cond as a bool."""
    if not cond:
        failures.append(what)
        print("FAIL:", what)
    return bool(cond)


def finish():
    """End the test: 'ok', or the number of failed checks and exit status 1."""
    if failures:
        print(f"{len(failures)} check(s) failed")
        sys.exit(1)
    print("ok")
    sys.exit(0)
