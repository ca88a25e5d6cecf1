"""The kernels' division by launch constants (cuda/fast_divide.h), checked on the host: the
header's host formula is the device formula (__umulhi written as a 64-bit product)."""
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.skipif(shutil.which("c++") is None, reason="no host C++ compiler")
def test_fast_divide_matches_integer_division(tmp_path):
    exe = tmp_path / "fast_divide_check"
    subprocess.run(["c++", "-std=c++17", "-O2", "-I", str(ROOT / "cuda"), "-o", str(exe),
                    str(ROOT / "tests" / "cuda" / "fast_divide_check.cc")], check=True)
    out = subprocess.run([str(exe)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout.startswith("ok "), out.stdout
    assert int(out.stdout.split()[1]) > 500_000_000  # the exhaustive part ran
