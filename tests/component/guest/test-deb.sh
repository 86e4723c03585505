#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# test-deb.sh BUILD_DIR: the corehint-guest .deb built with the project's own target (debian/,
# dpkg-buildpackage from the source tarball; tests/component/build-packages.sh): check its files, conffiles and maintainer
# scripts, run lintian (no errors, no warnings), and run what it installs from an extracted
# copy.
set -euo pipefail
build=$1
fail() { echo "FAIL: $*" >&2; exit 1; }

# built by tests/component/build-packages.sh (the ctest fixture corehint-packages)
mapfile -t debs < <(find "$build/deb" -maxdepth 1 -name 'corehint-guest_*.deb')
[ ${#debs[@]} -eq 1 ] || fail "expected one .deb, found ${#debs[@]}"
deb=${debs[0]}
echo "deb: $deb"

want=(./usr/sbin/corehint-guestd
      ./lib/systemd/system/corehint-guestd.service
      ./lib/udev/rules.d/90-corehint.rules
      ./etc/corehint/guestd.conf
      ./usr/share/man/man8/corehint-guestd.8.gz
      ./usr/share/doc/corehint-guest/copyright
      ./usr/share/doc/corehint-guest/changelog.gz
      ./usr/share/doc/corehint-guest/README.md
      ./usr/share/doc/corehint-guest/PROTOCOL.md)
# dh_compress gzips documentation past 4 KiB: compare without .gz on docs.
files=$(dpkg-deb -c "$deb" | awk '$1 !~ /^d/ {print $6}' | sed -E 's|^(\./usr/share/doc/.*\.md)\.gz$|\1|')
for f in "${want[@]}"; do
    grep -qx "$f" <<<"$files" || fail "$f missing from the package: $files"
done
[ "$(grep -c . <<<"$files")" -eq ${#want[@]} ] || fail "unexpected files: $files"

ctl=$(mktemp -d /tmp/corehint-debctl.XXXXXX)
root=$(mktemp -d /tmp/corehint-debroot.XXXXXX)
trap 'rm -rf "$ctl" "$root"' EXIT
dpkg-deb -e "$deb" "$ctl"
grep -qx /etc/corehint/guestd.conf "$ctl/conffiles" || fail "guestd.conf is not a conffile"
grep -qF 'udevadm trigger --action=add --subsystem-match=virtio-ports' "$ctl/postinst" &&
    grep -qF -- '--attr-match=name=org.corehint.0' "$ctl/postinst" ||
    fail "postinst does not trigger the port's rule (and only it)"
grep -qE 'deb-systemd-invoke (\$_dh_action |)start' "$ctl/postinst" &&
    fail "postinst starts the unit: the udev rule does, when the port exists"
grep -q 'deb-systemd-invoke stop.*corehint-guestd.service' "$ctl/prerm" ||
    fail "prerm does not stop the unit (ExecStopPost restores the full set): $(cat "$ctl/prerm" 2>&1)"
dpkg-deb -f "$deb" Depends | grep -q 'libjson-c5' || fail "shlibs: no libjson-c dependency"

if command -v lintian >/dev/null; then
    lintian --fail-on error,warning --tag-display-limit 0 "$deb" || fail "lintian"
else
    fail "lintian missing (scripts/deps installs it)"
fi

dpkg-deb -x "$deb" "$root"
"$root/usr/sbin/corehint-guestd" --version | grep -q '^corehint-guestd .*protocol v2' ||
    fail "binary does not run"
"$root/usr/sbin/corehint-guestd" --config "$root/etc/corehint/guestd.conf" --dump-config |
    grep -qx 'interval_ms = 1000' || fail "the shipped config does not load to the defaults"
unit=$root/lib/systemd/system/corehint-guestd.service
grep -qx 'ExecStart=/usr/sbin/corehint-guestd --log syslog' "$unit" || fail "ExecStart"
grep -qx 'RuntimeDirectory=corehint-guestd' "$unit" || fail "RuntimeDirectory"
grep -q '^\[Install\]' "$unit" && fail "the unit has an [Install] section: udev starts it"
grep -q 'ENV{SYSTEMD_WANTS}+="corehint-guestd.service"' "$root/lib/udev/rules.d/90-corehint.rules" ||
    fail "the udev rule does not want the unit"
# A missing systemd-analyze is a failure, not a skip: the unit would pass unverified.
command -v systemd-analyze >/dev/null ||
    fail "systemd-analyze not found: install package systemd (scripts/deps) to verify the unit"
sed "s|/usr/sbin/|$root/usr/sbin/|" "$unit" >"$root/corehint-guestd.service"
systemd-analyze verify --man=no "$root/corehint-guestd.service" || fail "systemd-analyze verify"
echo "PASS deb: ${#want[@]} files, conffile, maintainer scripts, lintian clean"
