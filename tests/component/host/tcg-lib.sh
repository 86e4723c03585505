# shellcheck shell=bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Shared by the hostd system tests: a transient-ish TCG guest under the real libvirtd, booting
# Debian's kernel (any /boot/vmlinuz-*, else the current linux-image-amd64 dependency,
# downloaded once into /var/cache/corehint/kernel) with a busybox initramfs.  Everything made
# here is removed by the EXIT trap, on failure too; libvirtd/virtlogd are stopped only when
# tests/lib/libvirt-env started them.
#
#   . tcg-lib.sh; tcg_begin NAME
#   tcg_initramfs INIT_SCRIPT [virtio]   # virtio: add the virtio-serial modules
#   tcg_domain CPUTUNE_XML DEVICES_XML   # define and start
#   tcg_wait_console REGEX SECONDS
set -uo pipefail

HOSTD=${HOSTD:?HOSTD names the corehint-hostd binary}
TCG_SRC=${COREHINT_SRC:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)}
TCG_BASE=/var/lib/corehint-test
TCG_KCACHE=/var/cache/corehint/kernel
TCG_DIR=
TCG_NAME=
TCG_PIDS=()

tcg_log() { echo "[${TCG_NAME:-tcg} +${SECONDS}s] $*" >&2; }
tcg_fail() {
    tcg_log "FAIL: $*"
    if [ -n "$TCG_DIR" ] && [ -f "$TCG_DIR/console.log" ]; then
        echo "----- guest console (tail)" >&2
        tail -n 30 "$TCG_DIR/console.log" >&2
    fi
    exit 1
}

tcg_cleanup() {
    local rc=$? p
    for p in "${TCG_PIDS[@]}"; do
        kill "$p" 2>/dev/null && wait "$p" 2>/dev/null
    done
    declare -F guests_remove_all >/dev/null && guests_remove_all && owned_end
    [ -n "$TCG_DIR" ] && rm -rf "$TCG_DIR"
    libvirt_env_down
    exit $rc
}

tcg_begin() { # name-prefix
    TCG_NAME=$1-$$
    TCG_DIR=$TCG_BASE/$TCG_NAME
    trap tcg_cleanup EXIT
    trap 'exit 1' INT TERM
    [ "$(id -u)" -eq 0 ] || tcg_fail "must run as root (libvirtd, qemu:///system)"
    local b
    for b in virsh qemu-system-x86_64 cpio gzip python3 dpkg-deb apt-cache; do
        command -v $b >/dev/null 2>&1 || tcg_fail "$b not found: run scripts/deps test"
    done
    [ -x /bin/busybox ] || tcg_fail "/bin/busybox (busybox-static) not found: run scripts/deps test"
    # shellcheck source=../../lib/libvirt-env
    . "$TCG_SRC/tests/lib/libvirt-env"
    # shellcheck source=../../lib/guests
    . "$TCG_SRC/tests/lib/guests"
    # shellcheck source=../../lib/owned
    . "$TCG_SRC/tests/lib/owned"
    libvirt_env_up || tcg_fail "libvirt did not come up"
    owned_sweep || tcg_fail "cannot remove what an earlier test left"
    owned_begin || tcg_fail "cannot register under $OWNED_STATE"
    mkdir -p "$TCG_BASE" "$TCG_DIR"
    chmod 755 "$TCG_BASE" "$TCG_DIR"
}

# The kernel package's unpacked tree (boot/vmlinuz, lib/modules/...), downloaded once.
tcg_kernel_tree() {
    local pkg deb
    pkg=$(apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-[0-9]/ {print $2; exit}')
    [ -n "$pkg" ] || { tcg_log "apt-cache knows no linux-image-amd64 dependency"; return 1; }
    mkdir -p "$TCG_KCACHE"
    if [ ! -d "$TCG_KCACHE/$pkg/lib/modules" ]; then
        deb=$(ls "$TCG_KCACHE/${pkg}"_*.deb 2>/dev/null | head -n 1)
        if [ -z "$deb" ]; then
            (cd "$TCG_KCACHE" && apt-get download "$pkg" >&2) || { tcg_log "apt-get download $pkg failed"; return 1; }
            deb=$(ls "$TCG_KCACHE/${pkg}"_*.deb | head -n 1)
        fi
        rm -rf "$TCG_KCACHE/$pkg.tmp"
        mkdir -p "$TCG_KCACHE/$pkg.tmp"
        # Only what the tests boot: the image and the virtio modules.
        dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$TCG_KCACHE/$pkg.tmp" --wildcards \
            './boot/vmlinuz-*' './lib/modules/*/kernel/drivers/virtio/*' \
            './lib/modules/*/kernel/drivers/char/virtio_console.ko' ||
            { tcg_log "cannot unpack $deb"; return 1; }
        rm -rf "${TCG_KCACHE:?}/${pkg:?}"
        mv "$TCG_KCACHE/$pkg.tmp" "$TCG_KCACHE/$pkg"
    fi
    echo "$TCG_KCACHE/$pkg"
}

# tcg_initramfs INIT [virtio]: vmlinuz and initrd.gz into $TCG_DIR.
tcg_initramfs() {
    local init=$1 virtio=${2:-} tree="" k root m
    k=$(ls /boot/vmlinuz-* 2>/dev/null | head -n 1)
    if [ -z "$k" ] || [ -n "$virtio" ]; then
        tree=$(tcg_kernel_tree) || tcg_fail "no kernel for the guest"
        k=$(ls "$tree"/boot/vmlinuz-* | head -n 1)
    fi
    install -m 644 "$k" "$TCG_DIR/vmlinuz"
    root=$TCG_DIR/initramfs
    mkdir -p "$root"/{bin,proc,dev,sys,lib/modules}
    cp /bin/busybox "$root/bin/busybox"
    for m in sh mount sleep cat insmod sed grep; do ln -s busybox "$root/bin/$m"; done
    if [ -n "$virtio" ]; then
        # Debian builds virtio-pci and virtio_console as modules; load order matters.
        for m in virtio/virtio_ring virtio/virtio virtio/virtio_pci_modern_dev \
                 virtio/virtio_pci_legacy_dev virtio/virtio_pci char/virtio_console; do
            cp "$(ls "$tree"/lib/modules/*/kernel/drivers/$m.ko)" "$root/lib/modules/" ||
                tcg_fail "module $m missing from the kernel package"
        done
    fi
    install -m 755 "$init" "$root/init"
    (cd "$root" && find . | cpio -o -H newc --quiet | gzip -1) >"$TCG_DIR/initrd.gz" || tcg_fail "cpio"
    chmod 644 "$TCG_DIR/initrd.gz"
    rm -rf "$root"
}

# tcg_acking_guest: start $TCG_NAME with the org.corehint.0 channel (socket
# $TCG_DIR/chan/corehint.sock) and an init that stands in for a helper: it finds the port,
# keeps both vCPUs busy, says hello, echoes every line it receives to the console
# ("corehint-rx: LINE"), answers a host hello that starts a session with its own and
# acknowledges every hint with a status in host mode, without applying anything (a guest that
# says it complies and does not).  It outlives the host side: the tests stop and start hostd
# against one guest.
tcg_acking_guest() {
    cat >"$TCG_DIR/init" <<'INIT'
#!/bin/sh
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
for m in virtio_ring virtio virtio_pci_modern_dev virtio_pci_legacy_dev virtio_pci virtio_console; do
    insmod /lib/modules/$m.ko
done
port=
for i in 1 2 3 4 5 6 7 8 9 10; do
    for n in /sys/class/virtio-ports/vport*; do
        [ "$(cat $n/name 2>/dev/null)" = org.corehint.0 ] && port=/dev/${n##*/}
    done
    [ -n "$port" ] && [ -e "$port" ] && break
    sleep 1
done
[ -n "$port" ] || { echo "corehint-test: no org.corehint.0 port"; while :; do sleep 60; done; }
echo "corehint-test: port $port"
(while :; do :; done) &
(while :; do :; done) &
hello='{"v":1,"type":"hello","role":"guest","agent":"tcg-test/1","online":"0-1","writable":false}'
exec 3<>"$port"
echo "$hello" >&3
# While no host holds the channel open a read returns end-of-file at once (virtio_console): a
# hostd stopped and started again is a new host, to be read from and greeted again.
gone=
session=
while :; do
    if ! read -r line <&3; then
        [ -n "$gone" ] || echo "corehint-test: host side closed"
        gone=1
        sleep 0.2
        continue
    fi
    gone=
    echo "corehint-rx: $line"
    case $line in
    *'"type":"hello","role":"host"'*)
        # answered only when it starts a session, as PROTOCOL.md 4.1 asks (hostd answers every
        # guest hello: answering every host hello would ping-pong)
        s=$(echo "$line" | sed -n 's/.*"session":"\([0-9a-f]*\)".*/\1/p')
        [ "$s" = "$session" ] || echo "$hello" >&3
        session=$s
        ;;
    *'"type":"hint"'*)
        seq=$(echo "$line" | sed -n 's/.*"seq":\([0-9]*\).*/\1/p')
        cpus=$(echo "$line" | sed -n 's/.*"cpus":"\([0-9,-]*\)".*/\1/p')
        echo "{\"v\":1,\"type\":\"status\",\"seq\":$seq,\"applied\":\"$cpus\",\"mode\":\"host\",\"steal_pct_x100\":0}" >&3
        ;;
    esac
done
INIT
    tcg_initramfs "$TCG_DIR/init" virtio
    # owned as libvirt makes its own channel directories (channel/target: libvirt-qemu, 0750),
    # which the packaged hostd reaches through group libvirt-qemu (corehint-hostd(8),
    # PERMISSIONS); no wider mode, so that a hostd without that group fails here too
    mkdir -p "$TCG_DIR/chan"
    chown libvirt-qemu:libvirt-qemu "$TCG_DIR/chan" && chmod 0750 "$TCG_DIR/chan" ||
        tcg_fail "cannot give $TCG_DIR/chan to libvirt-qemu (scripts/deps test installs libvirt)"
    tcg_domain "" \
        "<channel type='unix'><source mode='bind' path='$TCG_DIR/chan/corehint.sock'/><target type='virtio' name='org.corehint.0'/></channel>"
}

# tcg_domain CPUTUNE DEVICES: define and start a 2-vCPU TCG domain named $TCG_NAME.
tcg_domain() {
    : >"$TCG_DIR/console.log"
    chmod 666 "$TCG_DIR/console.log"
    cat >"$TCG_DIR/domain.xml" <<XML
<domain type='qemu'>
  <name>$TCG_NAME</name>
  <memory unit='MiB'>192</memory>
  <vcpu placement='static'>2</vcpu>
  <cputune>$1</cputune>
  <os>
    <type arch='x86_64'>hvm</type>
    <kernel>$TCG_DIR/vmlinuz</kernel>
    <initrd>$TCG_DIR/initrd.gz</initrd>
    <cmdline>console=ttyS0 quiet panic=-1</cmdline>
  </os>
  <cpu mode='custom' match='exact'><model fallback='allow'>qemu64</model></cpu>
  <on_poweroff>destroy</on_poweroff>
  <on_reboot>destroy</on_reboot>
  <on_crash>destroy</on_crash>
  <devices>
    <serial type='file'><source path='$TCG_DIR/console.log'/><target port='0'/></serial>
    $2
    <memballoon model='none'/>
  </devices>
</domain>
XML
    guests_start "$TCG_NAME" "$TCG_DIR/domain.xml" || tcg_fail "cannot start $TCG_NAME"
    tcg_log "started $TCG_NAME: $GUESTS_START_S"
}

tcg_wait_console() { # regex seconds
    guests_wait_line "$TCG_DIR/console.log" "$1" "$2" >/dev/null
}

# The administrator's own CPU quota on the guest (1.5 CPUs), which a hostd cap saves in the
# domain's metadata (under TCG_CAP_URI) and must give back.
TCG_CAP_URI=http://corehint.org/xmlns/hostd-cap/1
tcg_set_admin_quota() {
    virsh -q -c qemu:///system schedinfo --live "$TCG_NAME" --set global_period=100000 \
        --set global_quota=150000 >/dev/null || tcg_fail "cannot set the administrator's quota"
}
tcg_quota_now() { virsh -q -c qemu:///system schedinfo --live "$TCG_NAME" | awk '/global_quota/ {print $3}'; }
# the cap record hostd keeps in the live metadata (fails when there is none)
tcg_cap_record() { virsh -q -c qemu:///system metadata "$TCG_NAME" "$TCG_CAP_URI" --live; }

# Pin both vCPUs to host CPU 0 once the guest is up: booting pinned is slow on a loaded host.
tcg_pin_both_to_cpu0() {
    local v
    for v in 0 1; do
        virsh -q -c qemu:///system vcpupin "$TCG_NAME" $v 0 --live >/dev/null ||
            tcg_fail "virsh vcpupin $v"
    done
}
