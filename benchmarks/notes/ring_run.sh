# Round 37, prepared; run in round 38 (section A of results/sweeps/sc-session51-20261127.txt).
# The patch applies to 610fc64 only (HEAD has the ring for NHWC since 1ccdfb1): the staggered order kept for every segment (a token ring between
# the CTA's warpgroups: one multiplies while the other stores), -DTZ_RING. Against 68ade2b:
# A = HEAD, B = the ring (also --check: 1274 configurations, every staggered launch on it),
# C = the patched tree without the flag (the control: the same code as A). Carry
# .devbuild/plans-h200.txt (python -m jax_fastconv.plan_single_channel --export
# .devbuild/plans-h200.txt --hardware h200). ~65 s of wall time.
git apply benchmarks/notes/sc-wgmma-ring.patch
bash benchmarks/notes/ab_run.sh benchmarks/notes/sc-wgmma-ring.patch -DTZ_RING ""
