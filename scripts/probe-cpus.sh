#!/usr/bin/env bash
# Which of the host's CPUs are steady enough for few-thread Adam (issue 12)? One device call:
#   run(command="bash scripts/probe-cpus.sh", carry=["build/zbench", "build/lib"], timeout_s=300)
# 1. the host: topology, SMT siblings, where the GPU's interrupts go, steal time;
# 2. single-thread SIMD Adam on each CPU in turn, ZB_PROBE_PASSES passes (per-CPU speed and its drift);
# 3. the 2-thread suite configuration (gpt2-large dpu 1) with its workers on CPUs 0,1 (the default),
#    2,3 and 8,9, alternated, with each CPU's user/system/irq/steal ticks over each run.
set -u
OUT=${OUT:?"OUT: the output folder of the device tool"}
Z=build/zbench
N=$(nproc)
{
	date -u; lscpu; echo "hypervisor flag: $(grep -c hypervisor /proc/cpuinfo)"
	for c in /sys/devices/system/cpu/cpu[0-9]*; do
		echo "$(basename "$c") siblings $(cat "$c/topology/thread_siblings_list") core $(cat "$c/topology/core_id") \
mhz $(cat "$c/cpufreq/scaling_cur_freq" 2>/dev/null || echo -)"
	done
	grep -iE "nvidia|CPU0" /proc/interrupts | cut -c1-400
	echo "default_smp_affinity $(cat /proc/irq/default_smp_affinity)"
	for i in $(grep -i nvidia /proc/interrupts | cut -d: -f1); do echo "irq $i -> $(cat /proc/irq/$i/effective_affinity_list 2>/dev/null)"; done
	grep '^cpu' /proc/stat; cat /proc/loadavg
	ps -eo pid,psr,pcpu,comm --sort=-pcpu | head -15
	cat /sys/fs/cgroup/cpu.max /sys/fs/cgroup/cpuset.cpus.effective 2>/dev/null
} >"$OUT/host.txt" 2>&1
echo "host facts: $(wc -l <"$OUT/host.txt") lines"
for pass in $(seq 1 "${ZB_PROBE_PASSES:-2}"); do
	for c in $(seq 0 $((N - 1))); do
		r=$(taskset -c "$c" $Z bench --filter cpu-adam --threads 1 --repeats 5 --size 16000000 2>&1 | awk '$1==1{print $4}')
		echo "adam1 pass $pass cpu $c $r Gparam/s"
	done
done | tee "$OUT/adam1.txt"
snap() { grep '^cpu[0-9]' /proc/stat; }
for rep in 1 2 3; do
	for set in "0-$((N - 1))" "2-$((N - 1))" "8-$((N - 1))"; do # the pool pins from the lowest allowed CPU
		snap >/tmp/s0
		taskset -c "$set" $Z run --model gpt2-large --policy dpu --ratio 1 --threads 2 --micro-batch 4 \
			--seq 1024 --steps 8 --quiet --json >/tmp/run.json 2>/tmp/run.err
		rc=$?
		snap >/tmp/s1
		st=$(python3 -c "import json;j=json.load(open('/tmp/run.json'));m=j['measured'];print('%.1f ms, steps'%(m['step_time_s']*1e3), ' '.join('%.0f'%(x*1e3) for x in m.get('steps_s',[])))" 2>&1 | cut -c1-300)
		echo "t2 rep $rep set $set rc $rc step_time_s $st"
		# per-CPU ticks over the run: user nice system idle iowait irq softirq steal
		paste /tmp/s0 /tmp/s1 | awk '{n=NF/2; printf "  %s", $1; for (i=2;i<=9;i++) printf " %d", $(i+n)-$i; printf "\n"}'
		tail -2 /tmp/run.err
	done
done | tee "$OUT/t2.txt"
