# round 32: flat_pairs on / off (-DSC_NO_PAIRS) on the small b1 NCHW K3 layers, same machine
nvidia-smi --query-gpu=name --format=csv,noheader
(bash benchmarks/notes/build_driver.sh /tmp/drv_p & bash benchmarks/notes/build_driver.sh /tmp/drv_0 -DSC_NO_PAIRS & wait) > /dev/null 2>&1
for pass in 1 2 3; do for b in 0 p; do echo "=== pass $pass build $b"; SC_VARIANTS=0 /tmp/drv_$b --time --plans benchmarks/notes/plans-k3-nchw-small.txt 2>&1 | sed -n '/^case/,$p' | cut -c1-80; done; done
