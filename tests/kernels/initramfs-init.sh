#!/bin/busybox sh
# /init of the test VM's initramfs: loads the modules fetch.sh chose, mounts the host's root
# (shared read-only by 9p) under a tmpfs overlay so the guest may write anywhere without
# touching the host, mounts the job directory (shared read-write) and hands over to
# guest.sh there.
/bin/busybox mkdir -p /proc /sys /dev /usr/bin /usr/sbin /sbin
/bin/busybox --install -s
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
# The modules fetch.sh chose, in the order their dependencies need.
for m in $(cat /lib/modules/*/load-order); do
  insmod /lib/modules/*/"$m" || echo "init: cannot load $m"
done
mkdir -p /lower /rw /newroot
mount -t 9p -o trans=virtio,version=9p2000.L,ro,cache=loose,msize=262144 hostroot /lower ||
  { echo "init: cannot mount the host's root"; echo o > /proc/sysrq-trigger; }
mount -t tmpfs -o mode=755 rw /rw
mkdir -p /rw/upper /rw/work
mount -t overlay -o lowerdir=/lower,upperdir=/rw/upper,workdir=/rw/work overlay /newroot ||
  { echo "init: cannot mount the overlay"; echo o > /proc/sysrq-trigger; }
mkdir -p /newroot/job
mount -t 9p -o trans=virtio,version=9p2000.L,cache=none,msize=262144 job /newroot/job
umount /proc /sys
umount /dev
exec switch_root /newroot /bin/bash /job/guest.sh
