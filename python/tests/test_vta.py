"""TVM's VTA conv2d tutorial (ResNet-18 layer 9) on a `vta-sim` board from
Python: the module built by the TypeScript VTA compiler, the data packed and
the output unpacked in numpy as TVM's tutorial does, checked against a numpy
reference, and the board's statistics equal to what TVM's simulator printed.
Then TVM's program_fpga on a `vta` board (the device model): the bitstream's
hash becomes the board's label, and another configuration is refused."""
from __future__ import annotations

import hashlib
import json

import numpy as np
import pytest

from kernelfarm import FarmError

from modules import build_vta

# The tutorial's workload: 1×256×14×14 data, 256 filters 3×3, pad 1, stride 1; >> 8, clip [0, 127].
N, C, O, H, W, K, PAD, SHIFT, CLIP = 1, 256, 256, 14, 14, 3, 1, 8, (0, 127)
BATCH, BLOCK = 1, 16

#: TVM's simulator statistics for the tutorial (docs/vta-isa.md §9.3; tests/vta-farm.test.ts).
PUBLISHED = {
    "inp_load_nbytes": 114688,
    "wgt_load_nbytes": 1179648,
    "acc_load_nbytes": 0,
    "uop_load_nbytes": 1144,
    "out_store_nbytes": 50176,
    "gemm_counter": 451584,
    "alu_counter": 9408,
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


#: TVM's vta_config.json for the default configuration, as a Pynq bitstream's companion.
TVM_CONFIG = {
    "TARGET": "pynq",
    "HW_VER": "0.0.2",
    "LOG_INP_WIDTH": 3,
    "LOG_WGT_WIDTH": 3,
    "LOG_ACC_WIDTH": 5,
    "LOG_BATCH": 0,
    "LOG_BLOCK": 4,
    "LOG_UOP_BUFF_SIZE": 15,
    "LOG_INP_BUFF_SIZE": 15,
    "LOG_WGT_BUFF_SIZE": 18,
    "LOG_ACC_BUFF_SIZE": 17,
}


def test_program_fpga_labels_the_board_with_the_bitstream_and_refuses_another_configuration(tracker, conv2d, tmp_path):
    bitstream = tmp_path / "vta.bin"
    bitstream.write_bytes(bytes(range(256)) * 16)
    (tmp_path / "vta.json").write_text(json.dumps(TVM_CONFIG))
    sha256 = hashlib.sha256(bitstream.read_bytes()).hexdigest()
    board = next(b for b in tracker.summary().boards if b.key == "fpga")
    with tracker.request("fpga", board=board.id) as remote:
        assert remote.board.kind == "vta"
        loaded = remote.program_fpga(str(bitstream))
        assert loaded == (sha256, "1x16_i8w8a32_15_15_18_17")
        with pytest.raises(FarmError) as refused:
            remote.program_fpga(b"another", json.dumps({**TVM_CONFIG, "LOG_BLOCK": 5}).encode())
        assert refused.value.code == "TARGET_MISMATCH"
        assert "1x32_i8w8a32_15_15_18_17" in refused.value.message and "runs 1x16_i8w8a32_15_15_18_17" in refused.value.message
        with pytest.raises(FarmError, match="needs the configuration too"):
            remote.program_fpga(b"bytes alone")
        # The same module as on the simulator runs after the bitstream is loaded.
        remote.upload(conv2d)
        assert remote.load_module(conv2d.name).target == "vta"
    assert next(b for b in tracker.summary().boards if b.key == "fpga").labels["bitstream"] == sha256
    with pytest.raises(FarmError) as nobody:
        tracker.request("fpga", board="nobody/f0")
    assert nobody.value.code == "NO_BOARD"
