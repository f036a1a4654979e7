"""The soft roofline corner of calc_inference_latency's weight matmuls (ROOFLINE_CORNER_P): the
constant is the fit tools/fit_roofline_corner.py makes to DeepGEMM's measured FP8 GEMMs (its README
at the first release, a6d97a1, H800), and on those measurements it beats the sharp max. The serving
rows that judge it are in VALIDATION.md (tools/validate_serving.py); none set it."""
import math
import os
import sys

from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import ROOT

sys.path.insert(0, os.path.join(ROOT, "tools"))
from llmcalc.serve.forward import roofline_time_s  # noqa: E402 -- the formulas themselves
from llmcalc.serve.stacks import ROOFLINE_CORNER_P  # noqa: E402
import fit_roofline_corner as frc  # noqa: E402


def test_the_corner_constant_is_the_fit_to_deepgemm_measurements():
    f, b = frc.rates()
    assert frc.fit(f, b) == ROOFLINE_CORNER_P


def test_the_soft_corner_fits_the_measured_gemms_better_than_the_sharp_max():
    # DeepGEMM README @ a6d97a1: 28 FP8 GEMMs on an H800 (M 64..8192, N 2112..32768, K 512..16384)
    f, b = frc.rates()
    soft = frc.rms(frc.log_errors(ROOFLINE_CORNER_P, f, b))
    sharp = frc.rms(frc.log_errors(None, f, b))
    assert soft < 0.15 < 0.19 < sharp


@settings(max_examples=300, deadline=None)
@given(st.floats(0.0, 1e6), st.floats(0.0, 1e6), st.floats(1e-6, 1e6))
def test_the_corner_lies_between_the_max_and_the_sum_and_grows_with_either_time(tc, tm, more):
    # properties only (no pinned value): a kernel is never faster than its slower roof nor slower
    # than math and memory run one after the other, and more of either never makes it faster
    def t(c, m):
        return roofline_time_s(flops=c, bytes_moved=m, flops_per_s=1.0, bytes_per_s=1.0,
                                   corner_p=ROOFLINE_CORNER_P)
    x = t(tc, tm)
    assert math.isfinite(x) and max(tc, tm) * (1 - 1e-12) <= x <= (tc + tm) * (1 + 1e-12)
    assert t(tc + more, tm) >= x * (1 - 1e-12) and t(tc, tm + more) >= x * (1 - 1e-12)
