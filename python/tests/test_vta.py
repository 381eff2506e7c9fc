"""TVM's VTA conv2d tutorial (ResNet-18 layer 9) on a `vta-sim` board from
Python: the module built by the TypeScript VTA compiler, the data packed and
the output unpacked in numpy as TVM's tutorial does, checked against a numpy
reference, and the board's statistics equal to what TVM's simulator printed."""
from __future__ import annotations

import numpy as np
import pytest

from modules import build_vta

# The tutorial's workload: 1×256×14×14 data, 256 filters 3×3, pad 1, stride 1; >> 8, clip [0, 127].
N, C, O, H, W, K, PAD, SHIFT, CLIP = 1, 256, 256, 14, 14, 3, 1, 8, (0, 127)
BATCH, BLOCK = 1, 16

#: TVM's simulator statistics for the tutorial (docs/vta-isa.md §9.3; tests/vta-farm.test.ts).
PUBLISHED = {
    "inp_load_nbytes": 114688, "wgt_load_nbytes": 1179648, "acc_load_nbytes": 0, "uop_load_nbytes": 1144,
    "out_store_nbytes": 50176, "gemm_counter": 451584, "alu_counter": 9408,
}


def conv2d_reference(data: np.ndarray, kernel: np.ndarray) -> np.ndarray:
    """NCHW int8 data, OIHW int8 kernel → NCHW int8: int32 sums, arithmetic >> 8, clip, int8."""
    padded = np.pad(data.astype(np.float64), ((0, 0), (0, 0), (PAD, PAD), (PAD, PAD)))
    # Columns of every 3×3 window (exact in float64: the sums stay far below 2^53), one matrix product.
    cols = np.stack([padded[:, :, dy : dy + H, dx : dx + W] for dy in range(K) for dx in range(K)], axis=2)  # N, C, K*K, H, W
    acc = np.einsum("ncjhw,ocj->nohw", cols, kernel.reshape(O, C, K * K).astype(np.float64)).astype(np.int32)
    return np.clip(acc >> SHIFT, *CLIP).astype(np.int8)


def pack(x: np.ndarray, a: int, b: int) -> np.ndarray:
    """(A, B, H, W) → (A/a, B/b, H, W, a, b): VTA's blocked layout (host-sdk/vta/layout.ts)."""
    A, B, h, w = x.shape
    return x.reshape(A // a, a, B // b, b, h, w).transpose(0, 2, 4, 5, 1, 3).copy()


def unpack(x: np.ndarray) -> np.ndarray:
    """(A/a, B/b, H, W, a, b) → (A, B, H, W)."""
    Ao, Bo, h, w, a, b = x.shape
    return x.transpose(0, 4, 1, 5, 2, 3).reshape(Ao * a, Bo * b, h, w)


@pytest.fixture(scope="module")
def conv2d():
    return build_vta("convolution_opt")


def test_vta_conv2d_equals_the_reference_and_tvms_statistics(tracker, conv2d):
    rng = np.random.default_rng(103)
    data = rng.integers(-128, 128, (N, C, H, W), dtype=np.int8)
    kernel = rng.integers(-128, 128, (O, C, K, K), dtype=np.int8)
    want = conv2d_reference(data, kernel)
    assert want.any() and (want != CLIP[1]).any(), "a reference that exercises the epilogue"
    with tracker.request("vta") as remote:
        assert remote.board.kind == "vta-sim"
        remote.upload(conv2d)
        mod = remote.load_module(conv2d.name)
        assert mod.target == "vta"
        fn = mod["conv2d"]
        assert [tuple(p.shape) for p in fn.info.params] == [(1, 16, 14, 14, 1, 16), (16, 16, 3, 3, 16, 16), (1, 16, 14, 14, 1, 16)]
        d = remote.array(pack(data, BATCH, BLOCK))
        k = remote.array(pack(kernel, BLOCK, BLOCK))
        res = remote.empty((1, 16, 14, 14, 1, 16), "int8")
        remote.clear_stats()
        fn(d, k, res)
        counters = remote.stats().counters
        got = unpack(res.numpy())
        np.testing.assert_array_equal(got, want)
        assert {name: counters[name] for name in PUBLISHED} == PUBLISHED
        assert counters["cycle_count"] > 0

        # time_evaluator on the simulator: every timed call counts, and the output stays right.
        remote.clear_stats()
        timed = mod.time_evaluator("conv2d", number=2, repeat=2)(d, k, res)
        assert len(timed.results) == 2 and all(r > 0 for r in timed.results)
        calls = remote.stats().counters["gemm_counter"] / PUBLISHED["gemm_counter"]
        assert calls == 1 + 2 * 2, "a warm-up call, then number × repeat"
        np.testing.assert_array_equal(unpack(res.numpy()), want)
