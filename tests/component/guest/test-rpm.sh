#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# test-rpm.sh BUILD_DIR: build the corehint-guest RPM with the project's own target, check its
# file list, config marking, scriptlets and unit, then install it into a temporary root.
set -euo pipefail
build=$1
fail() { echo "FAIL: $*" >&2; exit 1; }

cmake --build "$build" --target rpm >/dev/null || fail "cmake --build --target rpm"
mapfile -t rpms < <(find "$build/rpm/RPMS" -name 'corehint-guest-*.rpm')
[ ${#rpms[@]} -eq 1 ] || fail "expected one RPM, found ${#rpms[@]}"
rpm=${rpms[0]}
echo "rpm: $rpm"

want=(/usr/sbin/corehint-guestd
      /usr/lib/systemd/system/corehint-guestd.service
      /usr/lib/udev/rules.d/90-corehint.rules
      /etc/corehint/guestd.conf
      /usr/share/man/man8/corehint-guestd.8.gz)
files=$(rpm -qlp "$rpm")
for f in "${want[@]}"; do
    grep -qx "$f" <<<"$files" || fail "$f missing from the package: $files"
done
[ "$(grep -c . <<<"$files")" -eq $((${#want[@]} + 1)) ] || fail "unexpected files: $files"
grep -qx /etc/corehint <<<"$files" || fail "/etc/corehint not owned"

# %config(noreplace): flags c (config) and n (noreplace).
flags=$(rpm -qp --qf '[%{FILENAMES} %{FILEFLAGS:fflags}\n]' "$rpm" | awk '$1=="/etc/corehint/guestd.conf"{print $2}')
[[ $flags == *c* && $flags == *n* ]] || fail "guestd.conf flags '$flags', want config(noreplace)"

scripts=$(rpm -qp --scripts "$rpm")
for s in "systemctl daemon-reload" "systemctl enable corehint-guestd.service" \
         "udevadm trigger --subsystem-match=virtio-ports" "systemctl --no-reload disable --now" \
         "systemctl try-restart"; do
    grep -qF "$s" <<<"$scripts" || fail "scriptlets lack '$s'"
done
grep -q '^postinstall scriptlet' <<<"$scripts" || fail "no %post"
grep -q '^preuninstall scriptlet' <<<"$scripts" || fail "no %preun"
grep -q '^postuninstall scriptlet' <<<"$scripts" || fail "no %postun"

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
if command -v systemd-analyze >/dev/null; then
    # The unit as installed, with ExecStart pointing into the temporary root.
    sed "s|/usr/sbin/|$root/usr/sbin/|" "$unit" >"$root/corehint-guestd.service"
    systemd-analyze verify --man=no "$root/corehint-guestd.service" || fail "systemd-analyze verify"
fi
echo "PASS rpm: ${#want[@]} files, scriptlets, unit and install into a temporary root"
