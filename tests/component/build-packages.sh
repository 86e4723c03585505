#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# build-packages.sh BUILD_DIR: build every package with the project's own targets, once, for
# the package tests (ctest fixture corehint-packages): "deb" (corehint-guest and
# corehint-hostd from debian/) and "rpm" (corehint-guest.spec, corehint-hostd.spec), each from
# the source tarball as a distribution builds it.  Build logs: BUILD_DIR/{deb,rpm}-build.log.
set -euo pipefail
build=$1
fail() { echo "FAIL: $*" >&2; exit 1; }
t0=$SECONDS
cmake --build "$build" --target deb >"$build/deb-build.log" 2>&1 ||
    { tail -40 "$build/deb-build.log"; fail "cmake --build --target deb"; }
echo "deb: $(cd "$build/deb" && ls -- *.deb | tr '\n' ' ')($((SECONDS - t0)) s)"
t0=$SECONDS
if command -v rpmbuild >/dev/null; then
    cmake --build "$build" --target rpm >"$build/rpm-build.log" 2>&1 ||
        { tail -40 "$build/rpm-build.log"; fail "cmake --build --target rpm"; }
    echo "rpm: $(cd "$build/rpm/RPMS" && find . -name '*.rpm' -printf '%f ')($((SECONDS - t0)) s)"
else
    fail "rpmbuild missing (scripts/deps installs rpm)"
fi
