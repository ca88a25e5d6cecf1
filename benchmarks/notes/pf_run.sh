# round 35 probe call: the package with the wgmma kernel's L2 band prefetch (plan[6] & 8;
# first: git apply benchmarks/notes/sc-wgmma-l2pf.patch, which applies to 9ba9feb),
# then xla_probes.py pf (stream span under XLA, distinct and shared inputs; plan timer).
set -x
nvidia-smi --query-gpu=name --format=csv,noheader
CMAKE_CUDA_ARCHITECTURES=90a bash benchmarks/device_run.sh build > $OUT/pkg_build.log 2>&1; tail -n 3 $OUT/pkg_build.log
cp benchmarks/notes/xla_probes.py /tmp/ && cd /tmp && python3 xla_probes.py pf 2>&1 | grep -v Warning | tee $OUT/pf.log
