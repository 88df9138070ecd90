#!/bin/busybox sh
# The guest's /init. Loads the modules, then for each line of /etc/vt/cases
#   NAME SECTORS TABLE...
# (TABLE: veritygen's table, as is: FORMAT /dev/vdaD /dev/vdaH DBS HBS
# BLOCKS HASH_START ALG ROOT SALT [N ARGS...], a FEC device among the ARGS
# named /dev/vdaN) maps the dm-verity target "0 SECTORS verity TABLE" over
# those partitions of the virtio disk vda and
# reads the whole mapped device; it reports on the console, each line
# starting with "@@VT ", then powers off. The mapped devices stay until the
# end, when one dmsetup call lists them all (each call costs under TCG).
/bin/busybox --install -s
export PATH=/sbin:/bin:/usr/sbin:/usr/bin
# No udev here: libdevmapper makes the /dev/mapper nodes itself.
export DM_DISABLE_UDEV=1
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
say() { echo "@@VT $*"; }
say BOOT uptime=$(cut -d' ' -f1 /proc/uptime)

while read -r m; do
	out=$(insmod "/lib/vt-modules/$m" 2>&1) || say ERROR insmod $m: $out
done < /etc/vt/modules
# Keep kernel messages off the console (they would cut into our lines);
# each case prints its own from the ring buffer.
dmesg -n 1

# The images: partitions 1..N of the one virtio disk, vda.
n=$(cat /etc/vt/partitions)
i=0
until [ -b /dev/vda$n ]; do
	i=$((i + 1))
	if [ $i -gt 100 ]; then
		say ERROR /dev/vda$n did not appear: $(ls /dev | grep vd)
		break
	fi
	sleep 0.1
done
say READY uptime=$(cut -d' ' -f1 /proc/uptime) partitions=$(ls /dev | grep -c '^vda[0-9]')
dmesg -c > /dev/null

# dm-verity reports each corrupted block in a uevent too
# (DM_VERITY_ERR_BLOCK_NR=TYPE,BLOCK; type 0 data, 1 metadata), which,
# unlike the kernel log, is not rate-limited. A change event on vda marks
# the end.
uevent sh -c 'if [ -n "$DM_VERITY_ERR_BLOCK_NR" ]; then echo "$DEVNAME $DM_VERITY_ERR_BLOCK_NR"; elif [ "$DEVNAME $ACTION" = "vda change" ]; then echo end; fi >> /tmp/verity-errors' &

while read -r name sectors rest; do
	say CASE $name
	table="0 $sectors verity $rest"
	say TABLE $table
	# The kernel names the FEC device by its major:minor in its own table.
	case "$table" in
	*" use_fec_from_device /dev/"*)
		f=${table#* use_fec_from_device /dev/}
		say FECDEV $(cat "/sys/class/block/${f%% *}/dev" 2>&1)
		;;
	esac
	out=$(dmsetup create --readonly "$name" --table "$table" 2>&1)
	say CREATE rc=$? $out
	if [ -b "/dev/mapper/$name" ]; then
		say SIZE $(blockdev --getsize64 "/dev/mapper/$name" 2>&1)
		out=$(sha256sum "/dev/mapper/$name" 2>&1)
		say READ rc=$? $out
	fi
	dmesg -c | sed -n '/verity\|device-mapper\|I\/O error/s/^/@@VT DMESG /p'
	say END $name
done < /etc/vt/cases

# The kernel's view of every mapped device, all at once: its table, its
# status (V verified, C corruption seen), its dm-N name, its verity errors.
dmsetup table | sed 's/^/@@VT KTABLE /'
dmsetup status | sed 's/^/@@VT STATUS /'
for d in /sys/block/dm-*; do
	[ -e "$d/dm/name" ] && say DEV ${d##*/} $(cat "$d/dm/name")
done
echo change > /sys/block/vda/uevent
i=0
until grep -q '^end$' /tmp/verity-errors 2>/dev/null; do
	i=$((i + 1))
	if [ $i -gt 100 ]; then
		say ERROR the uevent listener did not see the end event
		break
	fi
	sleep 0.1
done
grep -v '^end$' /tmp/verity-errors | sed 's/^/@@VT VERR /'
say DONE uptime=$(cut -d' ' -f1 /proc/uptime)
poweroff -f
