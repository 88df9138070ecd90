#!/bin/busybox sh
# The guest's /init for TestActivate: loads the modules, waits for the
# partitions of vda, then runs each test program listed in /etc/vt/tests
# (lines "NAME ARGS..."), /bin/NAME.test with ARGS, with the environment
# of /etc/vt/env. Each program's output goes to the console as
# "@@VT OUT NAME LINE", then "@@VT RC NAME CODE"; at the end the kernel's
# device-mapper and loop messages, then it powers off.
/bin/busybox --install -s
export PATH=/sbin:/bin:/usr/sbin:/usr/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mkdir -p /tmp /run
say() { echo "@@VT $*"; }
say BOOT uptime=$(cut -d' ' -f1 /proc/uptime)
while read -r m; do
	out=$(insmod "/lib/vt-modules/$m" 2>&1) || say ERROR insmod $m: $out
done < /etc/vt/modules
dmesg -n 1
n=$(cat /etc/vt/partitions)
i=0
until [ -b /dev/vda$n ]; do
	i=$((i + 1))
	if [ $i -gt 100 ]; then
		say ERROR /dev/vda$n did not appear
		break
	fi
	sleep 0.1
done
say READY uptime=$(cut -d' ' -f1 /proc/uptime)
dmesg -c > /dev/null
set -a
. /etc/vt/env
set +a
while read -r name args; do
	say RUN $name uptime=$(cut -d' ' -f1 /proc/uptime)
	(cd /tmp && /bin/$name.test $args > /tmp/$name.out 2>&1)
	rc=$?
	sed "s/^/@@VT OUT $name /" /tmp/$name.out
	say RC $name $rc
done < /etc/vt/tests
dmesg | sed -n '/device-mapper\|verity\|loop/s/^/@@VT DMESG /p' | tail -n 40
say DONE uptime=$(cut -d' ' -f1 /proc/uptime)
poweroff -f
