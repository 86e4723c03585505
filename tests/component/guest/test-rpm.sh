#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# test-rpm.sh BUILD_DIR: the corehint-guest RPM built with the project's own target (from the
# source tarball, as a distribution builds it; tests/component/build-packages.sh): check its file list, config marking, license,
# debuginfo, scriptlets and unit, run rpmlint, then install it into a temporary root.
set -euo pipefail
build=$1
fail() { echo "FAIL: $*" >&2; exit 1; }

# built by tests/component/build-packages.sh (the ctest fixture corehint-packages)
mapfile -t rpms < <(find "$build/rpm/RPMS" -name 'corehint-guest-[0-9]*.rpm')
[ ${#rpms[@]} -eq 1 ] || fail "expected one RPM, found ${#rpms[@]}"
rpm=${rpms[0]}
echo "rpm: $rpm"
for sub in debuginfo debugsource; do
    find "$build/rpm/RPMS" -name "corehint-guest-$sub-*.rpm" | grep -q . ||
        fail "no -$sub package: debuginfo must be kept"
done
rpm -qp --qf '%{SOURCERPM}\n' "$rpm" | grep -qx 'corehint-guest-0\.1\.0-1.*\.src\.rpm' ||
    fail "not built from the spec's source: $(rpm -qp --qf '%{SOURCERPM}' "$rpm")"

pkgdir=corehint-guest # %{_docdir_fmt}: Fedora's, and the spec's on Debian
want=(/usr/sbin/corehint-guestd
      /usr/lib/systemd/system/corehint-guestd.service
      /usr/lib/udev/rules.d/90-corehint.rules
      /etc/corehint/guestd.conf
      /usr/share/man/man8/corehint-guestd.8.gz
      "/usr/share/licenses/$pkgdir/LICENSE"
      "/usr/share/doc/$pkgdir/README.md"
      "/usr/share/doc/$pkgdir/PROTOCOL.md")
# Fedora's rpm adds /usr/lib/.build-id links to the binary; they are not ours to count.
files=$(rpm -qlp "$rpm" | grep -v '^/usr/lib/\.build-id')
for f in "${want[@]}"; do
    grep -qx "$f" <<<"$files" || fail "$f missing from the package: $files"
done
owned=(/etc/corehint "/usr/share/doc/$pkgdir" "/usr/share/licenses/$pkgdir")
[ "$(grep -c . <<<"$files")" -eq $((${#want[@]} + ${#owned[@]})) ] || fail "unexpected files: $files"
for d in "${owned[@]}"; do
    grep -qx "$d" <<<"$files" || fail "$d not owned"
done
rpm -qp --qf '[%{FILENAMES} %{FILEFLAGS:fflags}\n]' "$rpm" | grep -q "^/usr/share/licenses/$pkgdir/LICENSE .*l" ||
    fail "LICENSE is not %license"

# %config(noreplace): flags c (config) and n (noreplace).
flags=$(rpm -qp --qf '[%{FILENAMES} %{FILEFLAGS:fflags}\n]' "$rpm" | awk '$1=="/etc/corehint/guestd.conf"{print $2}')
[[ $flags == *c* && $flags == *n* ]] || fail "guestd.conf flags '$flags', want config(noreplace)"

scripts=$(rpm -qp --scripts "$rpm")
# What %systemd_post/_preun/_postun_with_restart expand to (Fedora's macros or the spec's
# fallbacks), and a trigger limited to our port.
for s in "preset corehint-guestd.service" "disable --now corehint-guestd.service" \
         "try-restart corehint-guestd.service" \
         "udevadm trigger --action=add --subsystem-match=virtio-ports --attr-match=name=org.corehint.0"; do
    grep -qF "$s" <<<"$scripts" || fail "scriptlets lack '$s': $scripts"
done
grep -q '^postinstall scriptlet' <<<"$scripts" || fail "no %post"
grep -q '^preuninstall scriptlet' <<<"$scripts" || fail "no %preun"
grep -q '^postuninstall scriptlet' <<<"$scripts" || fail "no %postun"

# rpmlint: no errors and no warnings, past the filters in corehint-guest.rpmlintrc (each a
# point where Debian's rpmlint and Fedora's guidelines disagree, with the reason).
if command -v rpmlint >/dev/null; then
    spec=$(dirname "$0")/../../../guest-helper/corehint-guest.spec
    lint=$(rpmlint -r "${spec%.spec}.rpmlintrc" "$rpm" "$spec" 2>&1 || true)
    echo "$lint" | tail -n 12
    grep -qE '[0-9]+ errors?' <<<"$lint" || fail "rpmlint printed no summary: $lint"
    grep -qE ' 0 errors, 0 warnings' <<<"$lint" || fail "rpmlint errors or warnings"
else
    fail "rpmlint missing (scripts/deps installs it)"
fi

root=$(mktemp -d /tmp/corehint-rpmroot.XXXXXX)
trap 'rm -rf "$root"' EXIT
rpm --root "$root" --dbpath "$root/var/lib/rpm" --initdb
rpm --root "$root" --dbpath "$root/var/lib/rpm" -i --nodeps --noscripts "$rpm" ||
    fail "rpm -i into $root"
rpm --root "$root" --dbpath "$root/var/lib/rpm" -q corehint-guest >/dev/null || fail "not registered"
for f in "${want[@]}"; do
    [ -f "$root$f" ] || fail "$f did not land in $root"
done
[ -x "$root/usr/sbin/corehint-guestd" ] || fail "binary not executable"
rpm --root "$root" --dbpath "$root/var/lib/rpm" -V --nodeps corehint-guest || fail "rpm -V: files differ from the package"
"$root/usr/sbin/corehint-guestd" --version | grep -q '^corehint-guestd ' || fail "binary does not run"
"$root/usr/sbin/corehint-guestd" --config "$root/etc/corehint/guestd.conf" --dump-config |
    grep -qx 'interval_ms = 1000' || fail "the shipped config does not load to the defaults"
unit=$root/usr/lib/systemd/system/corehint-guestd.service
grep -qx 'ExecStart=/usr/sbin/corehint-guestd --log syslog' "$unit" || fail "ExecStart"
grep -qx 'ExecStopPost=/usr/sbin/corehint-guestd --restore --log syslog' "$unit" || fail "ExecStopPost"
grep -qx 'Restart=always' "$unit" || fail "Restart=always"
grep -q '^ProtectKernelTunables' "$unit" && fail "ProtectKernelTunables would make /sys read-only"
grep -q 'ENV{SYSTEMD_WANTS}+="corehint-guestd.service"' "$root/usr/lib/udev/rules.d/90-corehint.rules" ||
    fail "udev rule does not want the unit"
gzip -dc "$root/usr/share/man/man8/corehint-guestd.8.gz" | grep -q '^\.TH COREHINT-GUESTD 8' || fail "man page"
# A missing systemd-analyze is a failure, not a skip: the unit would pass unverified.
command -v systemd-analyze >/dev/null ||
    fail "systemd-analyze not found: install package systemd (scripts/deps) to verify the unit"
# The unit as installed, with ExecStart pointing into the temporary root.
sed "s|/usr/sbin/|$root/usr/sbin/|" "$unit" >"$root/corehint-guestd.service"
systemd-analyze verify --man=no "$root/corehint-guestd.service" || fail "systemd-analyze verify"
echo "PASS rpm: ${#want[@]} files, scriptlets, unit and install into a temporary root"
