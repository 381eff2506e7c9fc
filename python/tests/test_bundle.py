"""The module bundle in Python against the TypeScript one (protos/bundle.ts,
msgpackr): the same bytes for the same record, the same reading of a bundle,
the same refusals with the same messages."""
from __future__ import annotations

import copy
import json

import pytest
from ts_reference import run_ts, ts_value

from kernelfarm.bundle import (
    DTYPES,
    CompiledModule,
    bundle_digest,
    bundle_name,
    decode_bundle,
    encode_bundle,
    host_cpu_target,
    pack,
    to_launch_config,
    unpack,
    validate_bundle,
)
from kernelfarm.errors import FarmError

# Values at every size boundary of msgpack's encodings, as JSON (what both sides read).
EDGE_VALUES = [
    0, 1, 31, 32, 127, 128, 255, 256, 65535, 65536, 2**32 - 1, 2**32, 2**53,
    -1, -32, -33, -128, -129, -32768, -32769, -(2**31), -(2**31) - 1,
    0.5, -2.25, 1e300, 2.0, -0.0, 3.0e9,
    True, False, None,
    "", "a" * 31, "a" * 32, "a" * 255, "a" * 256, "a" * 65535, "a" * 65536, "é" * 16, "€" * 100, "😀x" * 20,
    [], list(range(15)), list(range(16)), list(range(65536)),
    {}, {"b": 1, "a": 2}, {"b": 1, "10": 2, "2": 3, "-1": 4, "01": 5, "a": {"z": [1, {"y": None}]}},
    {f"k{i}": i for i in range(20)},
    b"", b"\x00" * 255, b"\x01" * 256, b"\x02" * 65535, b"\x03" * 65536,
]


def good_bundle() -> dict:
    """protos/bundle.spec.ts's good bundle, plus a CUDA-only launch moved to a CUDA twin below."""
    return {
        "format": "kernelfarm.bundle",
        "version": 1,
        "target": "cpu",
        "targetDetails": {"arch": "x86_64", "os": "linux"},
        "binary": bytes([0x7F, 0x45, 0x4C, 0x46, 1, 2, 3]),
        "functions": [
            {
                "name": "vadd",
                "params": [
                    {"name": "a", "kind": "buffer", "dtype": "float32", "shape": [4, 4]},
                    {"name": "b", "kind": "buffer", "dtype": "float32"},
                    {"name": "n", "kind": "scalar", "dtype": "int32"},
                ],
            }
        ],
        "meta": {"compiler": "cc", "flags": "-O2 -shared -fPIC"},
    }


def cuda_bundle() -> dict:
    b = good_bundle()
    b["target"] = "cuda"
    b["targetDetails"] = {"arch": "sm_90a", "format": "fatbin", "ptx": "compute_90a"}
    b["binary"] = bytes(range(256)) * 300
    b["functions"][0]["launch"] = {"grid": [65536, 2, 1], "block": [256, 1, 1], "sharedMemBytes": 49152}
    b["functions"].extend({"name": f"k{i}", "params": []} for i in range(16))
    return b


def mutate(path: list, value, base=good_bundle) -> dict:
    """A bundle with the value at `path` replaced (or deleted when value is DELETE)."""
    b = copy.deepcopy(base())
    node = b
    for step in path[:-1]:
        node = node[step]
    if value is DELETE:
        del node[path[-1]]
    else:
        node[path[-1]] = value
    return b


DELETE = object()

# Bad bundles, each with one thing wrong: Python and TypeScript must name the same field the same way.
BAD = [
    ("root a list", [1, 2]),
    ("format", mutate(["format"], "other.bundle")),
    ("format missing", mutate(["format"], DELETE)),
    ("version", mutate(["version"], 2)),
    ("version a string", mutate(["version"], "1")),
    ("target", mutate(["target"], "tpu")),
    ("targetDetails", mutate(["targetDetails"], None)),
    ("targetDetails value", mutate(["targetDetails", "os"], 5)),
    ("binary empty", mutate(["binary"], b"")),
    ("binary a string", mutate(["binary"], "ELF")),
    ("functions empty", mutate(["functions"], [])),
    ("function not a record", mutate(["functions", 0], "vadd")),
    ("function name", mutate(["functions", 0, "name"], "v-add")),
    ("function name trailing newline", mutate(["functions", 0, "name"], "vadd\n")),
    ("function params", mutate(["functions", 0, "params"], {"a": 1})),
    ("param name", mutate(["functions", 0, "params", 1, "name"], 7)),
    ("param kind", mutate(["functions", 0, "params", 1, "kind"], "pointer")),
    ("param dtype", mutate(["functions", 0, "params", 1, "dtype"], "float16")),
    ("shape on a scalar", mutate(["functions", 0, "params", 2, "shape"], [1])),
    ("shape zero", mutate(["functions", 0, "params", 0, "shape"], [4, 0])),
    ("shape fraction", mutate(["functions", 0, "params", 0, "shape"], [4, 1.5])),
    ("launch on cpu", mutate(["functions", 0, "launch"], {"grid": [1, 1, 1], "block": [1, 1, 1], "sharedMemBytes": 0})),
    ("launch grid", mutate(["functions", 0, "launch", "grid"], [0, 1, 1], cuda_bundle)),
    ("launch block short", mutate(["functions", 0, "launch", "block"], [32, 1], cuda_bundle)),
    ("launch smem", mutate(["functions", 0, "launch", "sharedMemBytes"], -1, cuda_bundle)),
    ("launch smem missing", mutate(["functions", 0, "launch", "sharedMemBytes"], DELETE, cuda_bundle)),
    ("cuda arch", mutate(["targetDetails", "arch"], "compute_90", cuda_bundle)),
    ("cuda arch missing", mutate(["targetDetails", "arch"], DELETE, cuda_bundle)),
    ("cuda format", mutate(["targetDetails", "format"], "ptx", cuda_bundle)),
]


@pytest.fixture(scope="module")
def ts():
    """Everything this module asks the TypeScript side, in one node run."""
    jobs = [{"op": "pack", "value": v} for v in EDGE_VALUES]
    jobs += [{"op": "encodeBundle", "bundle": good_bundle()}, {"op": "encodeBundle", "bundle": cuda_bundle()}]
    jobs += [{"op": "validateBundle", "bundle": b} for _, b in BAD]
    jobs += [{"op": "dtypes"}, {"op": "hostCpuTarget"}]
    jobs += [{"op": "toLaunchConfig", "decl": d, "where": "here"} for d in LAUNCHES]
    results = run_ts(jobs)
    out = {"pack": results[: len(EDGE_VALUES)]}
    rest = results[len(EDGE_VALUES) :]
    out["encode"], rest = rest[:2], rest[2:]
    out["validate"], rest = rest[: len(BAD)], rest[len(BAD) :]
    out["dtypes"], out["host"], rest = rest[0], rest[1], rest[2:]
    out["launch"] = rest
    return out


LAUNCHES = [
    {"grid": 4096, "block": 256},
    {"grid": [8, 8], "block": [16, 16], "sharedMemBytes": 1024},
    {"grid": [1, 2, 3], "block": 1, "sharedMemBytes": None},
    {"grid": 0, "block": 1},
    {"grid": [1, 2, 3, 4], "block": 1},
    {"grid": 8, "block": 2.5},
    {"grid": 8, "block": 32, "sharedMemBytes": -1},
]


@pytest.mark.parametrize("index", range(len(EDGE_VALUES)), ids=lambda i: f"{i}-{type(EDGE_VALUES[i]).__name__}")
def test_pack_matches_msgpackr_at_every_size_boundary(ts, index):
    expected = ts_value(ts["pack"][index])
    assert pack(EDGE_VALUES[index]).hex() == expected


def test_pack_orders_keys_as_javascript_does():
    # Integer-like keys first, ascending; then insertion order ("01" and "-1" are not integer-like).
    value = unpack(pack({"b": 1, "10": 2, "2": 3, "-1": 4, "01": 5}))
    assert list(value) == ["2", "10", "b", "-1", "01"]


def test_encode_bundle_is_byte_identical_to_encode_bundle_in_typescript(ts):
    for bundle, result in zip([good_bundle(), cuda_bundle()], ts["encode"]):
        data = encode_bundle(bundle)
        assert data.hex() == ts_value(result)
        assert decode_bundle(data) == bundle


def test_a_tuple_and_an_integral_float_encode_as_the_list_and_integer_they_are_in_javascript():
    b = good_bundle()
    b["functions"][0]["params"][0]["shape"] = (4.0, 4)
    assert encode_bundle(b) == encode_bundle(good_bundle())


@pytest.mark.parametrize("index", range(len(BAD)), ids=[name for name, _ in BAD])
def test_validation_names_the_same_field_with_the_same_message(ts, index):
    expected = ts["validate"][index]
    assert not expected["ok"], "the TypeScript side accepted it: the case is not bad"
    assert expected["code"] == "BAD_BUNDLE"
    with pytest.raises(FarmError) as info:
        validate_bundle(BAD[index][1])
    assert info.value.code == "BAD_BUNDLE"
    assert info.value.message == expected["message"]
    assert info.value.details == expected["details"]


def test_decode_refuses_what_is_not_a_bundle_with_bad_bundle():
    good = encode_bundle(good_bundle())
    cases = {
        "truncated": (good[:-3], "unexpected end of data"),
        "trailing bytes": (good + b"\x00", "1 bytes after the value"),
        "an extension": (bytes([0xD4, 0x05, 0x00]), "extension"),
        "a reserved byte": (bytes([0xC1]), "0xc1"),
        "not UTF-8": (bytes([0xA2, 0xFF, 0xFE]), "not UTF-8"),
        "a non-string key": (bytes([0x81, 0x01, 0x02]), "not a string"),
        "deep nesting": (bytes([0x91]) * 100000 + b"\x00", "nested too deeply"),
    }
    for name, (data, problem) in cases.items():
        with pytest.raises(FarmError) as info:
            decode_bundle(data)
        assert info.value.code == "BAD_BUNDLE", name
        assert info.value.message.startswith("not a kernelfarm module bundle: msgpack decoding failed ("), name
        assert problem in info.value.message, (name, info.value.message)
    with pytest.raises(FarmError, match=r"invalid module bundle: \(root\) is not a record"):
        decode_bundle(pack([1]))


def test_digest_name_and_a_compiled_module_read_back():
    data = encode_bundle(good_bundle())
    digest = bundle_digest(data)
    assert len(digest) == 64 and int(digest, 16) >= 0
    assert bundle_name(digest) == digest[:16] + ".kfm"
    m = CompiledModule.from_bytes(data)
    assert (m.name, m.digest, m.target, m.functions) == (bundle_name(digest), digest, "cpu", good_bundle()["functions"])
    assert "bytes" not in repr(m)


def test_dtypes_and_host_target_are_the_typescript_ones(ts):
    assert list(DTYPES) == ts_value(ts["dtypes"])
    assert host_cpu_target() == ts_value(ts["host"])


@pytest.mark.parametrize("index", range(len(LAUNCHES)), ids=[json.dumps(d) for d in LAUNCHES])
def test_to_launch_config_matches_typescript(ts, index):
    expected = ts["launch"][index]
    if expected["ok"]:
        assert to_launch_config(LAUNCHES[index], "here") == expected["value"]
    else:
        with pytest.raises(FarmError) as info:
            to_launch_config(LAUNCHES[index], "here")
        assert (info.value.code, info.value.message) == (expected["code"], expected["message"])
