# Its flags live in sc-wgmma-store-probes.patch: run it on a checkout of 0952445 with that patch applied.
# Round 40: the order of the wgmma kernel's output stores (timing; every build is a correct
# kernel). A = the tree as committed, B = -DTZ_PL_NOX=1 (NCHW: no lane exchange, each lane
# stores rows g and g + 8 of one filter in consecutive instructions: a filter's 256 bytes
# completed two instructions apart), C = -DTZ_PL_NOX=2 (the same stores, all rows g first:
# round 35's order), D = -DTZ_NHWC_PHQ (NHWC: a pixel's two 64-byte halves in consecutive
# instructions); --check on B and D. Carry .devbuild/plans-h200.txt. ~3 min of wall time.
CHECK="B D" bash benchmarks/notes/flags_run.sh -DTZ_PL_NOX=1 -DTZ_PL_NOX=2 -DTZ_NHWC_PHQ
