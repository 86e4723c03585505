#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# test-rpm.sh BUILD_DIR: the corehint-hostd RPM built with the project's own target (from the
# source tarball, as a distribution builds it; tests/component/build-packages.sh): check its
# file list, config marking, license, scriptlets (the user from the sysusers.d file before
# install, the systemd macros), run rpmlint, then install it into a temporary root and run it.
set -euo pipefail
build=$1
here=$(cd "$(dirname "$0")" && pwd)
fail() { echo "FAIL: $*" >&2; exit 1; }

mapfile -t rpms < <(find "$build/rpm/RPMS" -name 'corehint-hostd-[0-9]*.rpm')
[ ${#rpms[@]} -eq 1 ] || fail "expected one corehint-hostd RPM, found ${#rpms[@]}"
rpm=${rpms[0]}
echo "rpm: $rpm"
find "$build/rpm/RPMS" -name 'corehint-hostd-debuginfo-*.rpm' | grep -q . ||
    fail "no -debuginfo package: debuginfo must be kept"

pkgdir=corehint-hostd
want=(/usr/sbin/corehint-hostd
      /usr/bin/corehintctl
      /usr/lib/systemd/system/corehint-hostd.service
      /usr/lib/sysusers.d/corehint-hostd.conf
      /etc/corehint/hostd.conf
      /usr/share/man/man8/corehint-hostd.8.gz
      /usr/share/man/man1/corehintctl.1.gz
      /usr/share/doc/corehint/monitoring/corehint-rules.yml
      /usr/share/doc/corehint/monitoring/corehint-dashboard.json
      "/usr/share/licenses/$pkgdir/LICENSE"
      "/usr/share/doc/$pkgdir/README.md"
      "/usr/share/doc/$pkgdir/PROTOCOL.md")
files=$(rpm -qlp "$rpm" | grep -v '^/usr/lib/\.build-id')
for f in "${want[@]}"; do
    grep -qx "$f" <<<"$files" || fail "$f missing from the package: $files"
done
owned=(/etc/corehint /usr/share/doc/corehint /usr/share/doc/corehint/monitoring
       "/usr/share/doc/$pkgdir" "/usr/share/licenses/$pkgdir")
for d in "${owned[@]}"; do
    grep -qx "$d" <<<"$files" || fail "$d not owned"
done
[ "$(grep -c . <<<"$files")" -eq $((${#want[@]} + ${#owned[@]})) ] || fail "unexpected files: $files"
flags=$(rpm -qp --qf '[%{FILENAMES} %{FILEFLAGS:fflags}\n]' "$rpm" | awk '$1=="/etc/corehint/hostd.conf"{print $2}')
[[ $flags == *c* && $flags == *n* ]] || fail "hostd.conf flags '$flags', want config(noreplace)"
rpm -qp --requires "$rpm" | grep -q '^libvirt-daemon' || fail "does not require libvirt-daemon"

scripts=$(rpm -qp --scripts "$rpm")
pre=$(awk '/^preinstall scriptlet/{on=1; next} /scriptlet/{on=0} on' <<<"$scripts")
grep -q 'systemd-sysusers' <<<"$pre" || fail "%pre does not run systemd-sysusers: $scripts"
# the sysusers.d file is embedded in %pre (the file is not on disk before install)
grep -qF 'u corehint - "corehint host agent"' <<<"$pre" && grep -qF 'm corehint libvirt-qemu' <<<"$pre" ||
    fail "%pre does not carry the sysusers.d lines: $pre"
for s in "preset corehint-hostd.service" "disable --now corehint-hostd.service" \
         "try-restart corehint-hostd.service"; do
    grep -qF "$s" <<<"$scripts" || fail "scriptlets lack '$s': $scripts"
done

spec=$here/../../../host-agent/corehint-hostd.spec
lint=$(rpmlint -r "${spec%.spec}.rpmlintrc" "$rpm" "$spec" 2>&1 || true)
echo "$lint" | tail -n 12
grep -qE '[0-9]+ errors?' <<<"$lint" || fail "rpmlint printed no summary: $lint"
grep -qE ' 0 errors, 0 warnings' <<<"$lint" || fail "rpmlint errors or warnings"

root=$(mktemp -d /tmp/corehint-hostrpm.XXXXXX)
trap 'rm -rf "$root"' EXIT
rpm --root "$root" --dbpath "$root/var/lib/rpm" --initdb
rpm --root "$root" --dbpath "$root/var/lib/rpm" -i --nodeps --noscripts "$rpm" || fail "rpm -i into $root"
rpm --root "$root" --dbpath "$root/var/lib/rpm" -V --nodeps corehint-hostd || fail "rpm -V"
"$root/usr/sbin/corehint-hostd" --version | grep -q '^corehint-hostd ' || fail "binary does not run"
"$root/usr/sbin/corehint-hostd" -c "$root/etc/corehint/hostd.conf" --dump-config |
    grep -qx 'interval_ms = 1000' || fail "the shipped config does not load to the defaults"
unit=$root/usr/lib/systemd/system/corehint-hostd.service
grep -qx 'ExecStart=/usr/sbin/corehint-hostd --foreground --user corehint --groups libvirt,libvirt-qemu' "$unit" ||
    fail "ExecStart: $(grep ExecStart "$unit")"
python3 -c 'import json, sys; json.load(open(sys.argv[1]))' "$root/usr/share/doc/corehint/monitoring/corehint-dashboard.json" ||
    fail "dashboard JSON"
echo "PASS hostd rpm: ${#want[@]} files, scriptlets, rpmlint clean, installed into a temporary root"
