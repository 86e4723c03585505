#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# test-deb.sh BUILD_DIR: the corehint-hostd .deb built with the project's own target (debian/,
# dpkg-buildpackage from the source tarball; tests/component/build-packages.sh): check its
# files, conffiles, dependencies and maintainer scripts, run lintian (no errors, no warnings),
# then install it on this machine with apt (dependencies resolved), check what the
# maintainer scripts did (user corehint in groups libvirt and libvirt-qemu, the unit enabled,
# the conffile), run what it installed, and purge it.  Needs root.
set -euo pipefail
build=$1
fail() { echo "FAIL: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || fail "needs root (it installs the package)"

mapfile -t debs < <(find "$build/deb" -maxdepth 1 -name 'corehint-hostd_*.deb')
[ ${#debs[@]} -eq 1 ] || fail "expected one corehint-hostd .deb, found ${#debs[@]}"
deb=${debs[0]}
echo "deb: $deb"

want=(./usr/sbin/corehint-hostd
      ./usr/bin/corehintctl
      ./lib/systemd/system/corehint-hostd.service
      ./usr/lib/sysusers.d/corehint-hostd.conf
      ./etc/corehint/hostd.conf
      ./usr/share/man/man8/corehint-hostd.8.gz
      ./usr/share/man/man1/corehintctl.1.gz
      ./usr/share/doc/corehint-hostd/copyright
      ./usr/share/doc/corehint-hostd/changelog.gz
      ./usr/share/doc/corehint-hostd/README.md
      ./usr/share/doc/corehint-hostd/PROTOCOL.md
      ./usr/share/doc/corehint-hostd/monitoring/corehint-rules.yml
      ./usr/share/doc/corehint-hostd/monitoring/corehint-dashboard.json)
# dh_compress gzips documentation past 4 KiB (not the monitoring files): compare without .gz.
files=$(dpkg-deb -c "$deb" | awk '$1 !~ /^d/ {print $6}' | sed -E 's|^(\./usr/share/doc/.*\.md)\.gz$|\1|')
for f in "${want[@]}"; do
    grep -qx "$f" <<<"$files" || fail "$f missing from the package: $files"
done
[ "$(grep -c . <<<"$files")" -eq ${#want[@]} ] || fail "unexpected files: $files"

ctl=$(mktemp -d /tmp/corehint-hostdeb.XXXXXX)
purge() {
    if dpkg-query -W -f='${Status}' corehint-hostd 2>/dev/null | grep -q installed; then
        DEBIAN_FRONTEND=noninteractive apt-get purge -y -qq corehint-hostd >/dev/null 2>&1 || true
    fi
}
trap 'rm -rf "$ctl"; purge' EXIT
dpkg-deb -e "$deb" "$ctl"
grep -qx /etc/corehint/hostd.conf "$ctl/conffiles" || fail "hostd.conf is not a conffile"
grep -q 'systemd-sysusers.*corehint-hostd.conf' "$ctl/postinst" ||
    fail "postinst does not create the user from the sysusers.d file: $(cat "$ctl/postinst")"
grep -q 'deb-systemd-helper.*enable.*corehint-hostd.service\|deb-systemd-helper.*corehint-hostd.service' "$ctl/postinst" ||
    fail "postinst does not enable the unit"
grep -q 'deb-systemd-invoke stop.*corehint-hostd.service' "$ctl/prerm" ||
    fail "prerm does not stop the unit"
dep=$(dpkg-deb -f "$deb" Depends)
for d in libvirt0 libjson-c5 libxml2 libvirt-daemon-system; do
    grep -q "$d" <<<"$dep" || fail "Depends lacks $d: $dep"
done

lintian --fail-on error,warning --tag-display-limit 0 "$deb" || fail "lintian"

# Installed as an operator would: apt resolves the dependencies from this machine's archive.
purge # what a run killed before its own cleanup left
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$(realpath "$deb")" >"$build/hostd-deb-install.log" 2>&1 ||
    { tail -20 "$build/hostd-deb-install.log"; fail "apt-get install ./corehint-hostd.deb"; }
dpkg-query -W -f='${Status}\n' corehint-hostd | grep -qx 'install ok installed' || fail "not installed"
for f in "${want[@]}"; do
    [ -e "${f#.}" ] || [ -e "${f#.}.gz" ] || fail "${f#.} not on the system after install"
done
id corehint >/dev/null 2>&1 || fail "postinst did not create user corehint"
for g in libvirt libvirt-qemu; do
    id -nG corehint | tr ' ' '\n' | grep -qx "$g" || fail "corehint is not in group $g: $(id corehint)"
done
[ -L /etc/systemd/system/multi-user.target.wants/corehint-hostd.service ] ||
    fail "the unit is not enabled (no multi-user.target.wants link)"
/usr/sbin/corehint-hostd --version | grep -q '^corehint-hostd ' || fail "corehint-hostd does not run"
/usr/sbin/corehint-hostd -c /etc/corehint/hostd.conf --dump-config | grep -qx 'interval_ms = 1000' ||
    fail "the installed hostd.conf does not load to the defaults"
/usr/bin/corehintctl --help | grep -q 'corehintctl' || fail "corehintctl does not run"
man -w corehint-hostd >/dev/null 2>&1 || [ -f /usr/share/man/man8/corehint-hostd.8.gz ] || fail "man page"
echo "installed: user $(id corehint), unit enabled"

DEBIAN_FRONTEND=noninteractive apt-get purge -y -qq corehint-hostd >>"$build/hostd-deb-install.log" 2>&1 ||
    fail "apt-get purge corehint-hostd"
for f in /usr/sbin/corehint-hostd /usr/bin/corehintctl /etc/corehint/hostd.conf \
         /lib/systemd/system/corehint-hostd.service \
         /etc/systemd/system/multi-user.target.wants/corehint-hostd.service; do
    [ ! -e "$f" ] && [ ! -L "$f" ] || fail "$f left after purge"
done
echo "PASS hostd deb: ${#want[@]} files, conffile, scriptlets, lintian clean, installed with apt and purged"
