# perf_cats.awk - where a process's CPU samples go, by kind of work: its own
# code, libc, and the kernel split into context switches, waking the peer,
# TCP send (on loopback/veth this includes the receiver's TCP input, which
# runs in the sender's context), TCP receive, epoll, accept, close.
#
#   perf record -e cpu-clock -g -p PID -o perf.data -- sleep 9
#   perf script -i perf.data -F ip,sym,dso | gawk -f tests/bench/perf_cats.awk
#
# Why by stack and not by leaf symbol: without hardware counters (a VM),
# cpu-clock samples cannot fire while interrupts are off, so the time spent
# in a context switch or a wakeup is charged to the point where interrupts
# come back on (finish_task_switch, _raw_spin_unlock_irqrestore). Looking for
# __schedule or sock_def_readable/try_to_wake_up anywhere in the kernel stack
# puts that time where it belongs.
function flush(    i, s, d, sc, cat, kern_leaf, sched, wake) {
	if (!n) return
	sc = "none"
	# the syscall: from the kernel frames, else from the first user frame
	# (a preemption at syscall exit has only the entry frames left)
	for (i = 1; i <= n && sc == "none"; i++) {
		s = sym[i]
		if (s ~ /__sys_sendto|__x64_sys_sendto/) sc = "sendto"
		else if (s ~ /__sys_recvfrom|__x64_sys_recvfrom/) sc = "recvfrom"
		else if (s ~ /do_epoll_wait/) sc = "epoll_wait"
		else if (s ~ /sys_accept/) sc = "accept"
		else if (s ~ /__x64_sys_connect/) sc = "connect"
		else if (s ~ /__x64_sys_close|^__fput/) sc = "close"
	}
	if (sc == "none")
		for (i = 1; i <= n; i++) {
			if (dso[i] ~ /kernel/) continue
			s = sym[i]
			if (s ~ /^(__send|send|__libc_send|sendto)$/) sc = "sendto"
			else if (s ~ /^(__libc_recv|recv|__recv|recvfrom)$/) sc = "recvfrom"
			else if (s ~ /epoll_wait/) sc = "epoll_wait"
			else if (s ~ /accept/) sc = "accept"
			else if (s ~ /connect/) sc = "connect"
			else if (s ~ /close/) sc = "close"
			break
		}
	kern_leaf = dso[1] ~ /kernel/
	sched = wake = 0
	for (i = 1; i <= n; i++) {
		if (sym[i] ~ /^(__schedule|finish_task_switch)/) sched = 1
		if (sym[i] ~ /^(try_to_wake_up|__wake_up|ep_poll_callback|sock_def_readable|sk_stream_write_space)/) wake = 1
	}
	if (!kern_leaf) cat = dso[1] ~ /libcrypto/ ? "user: libcrypto (SHA1)" : dso[1] ~ /libc\.so/ ? "user: libc" : "user: " dso_base(dso[1])
	else if (sched) cat = "kernel: context switch"
	else if (wake) cat = "kernel: waking the peer"
	else if (sc == "sendto") cat = "kernel: TCP send (+ receiver's TCP input)"
	else if (sc == "recvfrom") cat = "kernel: TCP receive"
	else if (sc == "none") cat = "kernel: syscall entry/exit, other"
	else cat = "kernel: " sc
	cats[cat]++
	via[cat " | " sc]++
	total++
	n = 0
}
function dso_base(d) { sub(/.*\//, "", d); return d }
/^[ \t]*$/ { flush(); next }
/^[ \t]+[0-9a-f]+ / {
	line = $0
	sub(/^[ \t]+[0-9a-f]+ /, "", line)
	d = line
	sub(/.*\(/, "", d); sub(/\)$/, "", d)
	s = line
	sub(/ \(.*$/, "", s); sub(/\+0x[0-9a-f]+$/, "", s)
	n++
	sym[n] = s
	dso[n] = d
}
END {
	flush()
	printf "%d samples\n", total
	PROCINFO["sorted_in"] = "@val_num_desc"
	for (c in cats) printf "%6.1f%%  %s\n", 100 * cats[c] / total, c
	print "-- by category | syscall the sample was in:"
	for (c in via) if (100 * via[c] / total >= 0.5) printf "%6.1f%%  %s\n", 100 * via[c] / total, c
}
