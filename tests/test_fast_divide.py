"""The kernels' division by launch constants (cuda/fast_divide.h), checked on the host: the
header's host formula is the device formula (__umulhi written as a 64-bit product)."""
import subprocess

from _helpers import build_host_check


def test_fast_divide_matches_integer_division(tmp_path):
    exe = build_host_check("fast_divide_check", tmp_path)
    out = subprocess.run([str(exe)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout.startswith("ok "), out.stdout
    assert int(out.stdout.split()[1]) > 500_000_000  # the exhaustive part ran
