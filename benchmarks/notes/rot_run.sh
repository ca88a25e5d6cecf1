# Round 38, prepared (not run): each CTA's segments in a rotated order (by blockIdx.x, -DTZ_ROT),
# so that the CTAs in flight do not all write the same offsets of their planes (NCHW) or the
# same lines (NHWC) at the same time. Against 1ccdfb1's kernel: A = HEAD, B = the rotation (also
# --check), C = the patched tree without the flag (control). Pair it with plane_stride_run.sh
# in one call: if padded planes are faster there, this is the in-kernel way to get the same
# spread. Carry .devbuild/plans-h200.txt. ~65 s of wall time.
git apply benchmarks/notes/sc-wgmma-rot.patch
bash benchmarks/notes/ab_run.sh benchmarks/notes/sc-wgmma-rot.patch -DTZ_ROT ""
