"""The module bundle in Python against the TypeScript one (protos/bundle.ts,
protobufjs; both on protos/farm/v1/bundle.proto): the same canonical bytes
for the same record, the same reading of a bundle, the same refusals with
the same messages."""
from __future__ import annotations

import copy
import json

import pytest
from ts_reference import run_ts, ts_value

from kernelfarm.bundle import (
    BUNDLE_VERSION,
    DTYPES,
    CompiledModule,
    bundle_digest,
    bundle_name,
    decode_bundle,
    encode_bundle,
    host_cpu_target,
    to_launch_config,
    validate_bundle,
)
from kernelfarm.errors import FarmError
from kernelfarm.protos import bundle_pb2

#: protos/bundle.spec.ts's canonical case (an empty value, meta out of order, a 0-d shape, zero shared memory)
#: and its pinned bytes.
CANONICAL_CASE = {
    "format": "kernelfarm.bundle",
    "version": BUNDLE_VERSION,
    "target": "cuda",
    "targetDetails": {"os": "", "arch": "sm_90", "format": "cubin"},
    "binary": bytes([0x7F, 0x45, 0x4C, 0x46]),
    "functions": [
        {
            "name": "f",
            "params": [
                {"name": "a", "kind": "buffer", "dtype": "float32", "shape": []},
                {"name": "n", "kind": "scalar", "dtype": "int32"},
            ],
            "launch": {"grid": [1, 2, 3], "block": [4, 1, 1], "sharedMemBytes": 0},
        }
    ],
    "meta": {"z": "1", "a": "2"},
}
CANONICAL_CASE_HEX = (
    "0a116b65726e656c6661726d2e62756e646c6510021a0463756461220d0a04617263681205736d5f3930220f0a06666f726d61741205637562696e22040a026f"
    "732a047f454c46323b0a016612160a016112066275666665721a07666c6f61743332220012120a016e12067363616c61721a05696e7433321a0a0a0301020312"
    "030401013a060a01611201323a060a017a120131"
)
#: A version-1 bundle as kernelfarm's msgpack encoder wrote it (protos/bundle.spec.ts MSGPACK_V1_HEX).
MSGPACK_V1_HEX = (
    "de0006a6666f726d6174b16b65726e656c6661726d2e62756e646c65a776657273696f6e01a6746172676574a3637075ad74617267657444657461696c73de00"
    "02a461726368a67838365f3634a26f73a56c696e7578a662696e617279c4047f454c46a966756e6374696f6e7391de0002a46e616d65a166a6706172616d7390"
)


def non_canonical() -> dict[str, bytes]:
    """Bytes that decode to a valid bundle but are not its canonical encoding, as google.protobuf can be made to write them."""
    m = bundle_pb2.ModuleBundle(format="kernelfarm.bundle", version=BUNDLE_VERSION, target="cpu", binary=b"\x01")
    m.functions.add(name="f")
    m.target_details.add(key="os", value="linux")
    m.target_details.add(key="arch", value="x86_64")
    unsorted = m.SerializeToString()
    del m.target_details[:]
    m.target_details.add(key="arch", value="x86_64")
    m.target_details.add(key="os", value="linux")
    canonical = m.SerializeToString()
    twice = bundle_pb2.ModuleBundle()
    twice.CopyFrom(m)
    twice.target_details.add(key="os", value="linux")
    return {
        "canonical": canonical,
        "entries out of order": unsorted,
        "a key twice": twice.SerializeToString(),
        "an unknown field": canonical + b"\x40\x01",
        "fields out of order": canonical[19:] + canonical[:19],
        "a field twice": canonical + b"\x10\x02",  # version again: the last one read wins, so it decodes to the same bundle
        "a default written": canonical + b"\x3a\x02\x0a\x00",  # a meta entry whose key "" is written (protobufjs writes a present "")
    }


def good_bundle() -> dict:
    """protos/bundle.spec.ts's good bundle, plus a CUDA-only launch moved to a CUDA twin below."""
    return {
        "format": "kernelfarm.bundle",
        "version": BUNDLE_VERSION,
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
    ("version", mutate(["version"], 3)),
    ("version a string", mutate(["version"], "2")),
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
    jobs = [{"op": "encodeBundle", "bundle": b} for b in ENCODED]
    jobs += [{"op": "validateBundle", "bundle": b} for _, b in BAD]
    jobs += [{"op": "dtypes"}, {"op": "hostCpuTarget"}]
    jobs += [{"op": "toLaunchConfig", "decl": d, "where": "here"} for d in LAUNCHES]
    jobs += [{"op": "decodeBundle", "hex": data.hex()} for data in DECODED.values()]
    results = iter(run_ts(jobs))

    def take(n: int) -> list:
        return [next(results) for _ in range(n)]

    out = {"encode": take(len(ENCODED)), "validate": take(len(BAD))}
    [out["dtypes"], out["host"]] = take(2)
    out["launch"] = take(len(LAUNCHES))
    out["decode"] = dict(zip(DECODED, take(len(DECODED))))
    return out


#: Bundles both sides encode: the test's own, and one with every canonical rule at work.
ENCODED = [good_bundle(), cuda_bundle(), CANONICAL_CASE]
#: Bytes both sides decode (or refuse): the old format, non-canonical encodings, garbage.
DECODED = {"msgpack v1": bytes.fromhex(MSGPACK_V1_HEX), **non_canonical(), "garbage": b"\xff\xff\xff", "empty": b""}

LAUNCHES = [
    {"grid": 4096, "block": 256},
    {"grid": [8, 8], "block": [16, 16], "sharedMemBytes": 1024},
    {"grid": [1, 2, 3], "block": 1, "sharedMemBytes": None},
    {"grid": 0, "block": 1},
    {"grid": [1, 2, 3, 4], "block": 1},
    {"grid": 8, "block": 2.5},
    {"grid": 8, "block": 32, "sharedMemBytes": -1},
]


def test_encode_bundle_is_byte_identical_to_encode_bundle_in_typescript(ts):
    for bundle, result in zip(ENCODED, ts["encode"]):
        data = encode_bundle(bundle)
        assert data.hex() == ts_value(result)
        assert decode_bundle(data) == bundle


def test_the_canonical_case_has_its_pinned_bytes():
    # Pinned on both sides (protos/bundle.spec.ts): a change of encoding changes every content address.
    assert encode_bundle(CANONICAL_CASE).hex() == CANONICAL_CASE_HEX
    reordered = copy.deepcopy(CANONICAL_CASE)
    reordered["targetDetails"] = {"format": "cubin", "os": "", "arch": "sm_90"}
    assert encode_bundle(reordered).hex() == CANONICAL_CASE_HEX


def test_a_tuple_and_an_integral_float_encode_as_the_list_and_integer_they_are_in_javascript():
    b = good_bundle()
    b["functions"][0]["params"][0]["shape"] = (4.0, 4)
    assert encode_bundle(b) == encode_bundle(good_bundle())


def test_a_version_1_bundle_is_refused_as_in_typescript_saying_to_recompile(ts):
    expected = ts["decode"]["msgpack v1"]
    with pytest.raises(FarmError) as info:
        decode_bundle(DECODED["msgpack v1"])
    assert (info.value.code, info.value.message, info.value.details) == (expected["code"], expected["message"], expected["details"])
    assert (
        "version is 1, the msgpack encoding" in info.value.message
        and "recompile the module with this version of the SDK" in info.value.message
    )


@pytest.mark.parametrize("name", [n for n in non_canonical() if n != "canonical"])
def test_bytes_that_are_not_the_canonical_encoding_are_refused_as_in_typescript(ts, name):
    assert decode_bundle(DECODED["canonical"])["functions"] == [{"name": "f", "params": []}], "the baseline is canonical"
    assert ts["decode"]["canonical"]["ok"]
    expected = ts["decode"][name]
    with pytest.raises(FarmError) as info:
        decode_bundle(DECODED[name])
    assert (info.value.code, info.value.details) == ("BAD_BUNDLE", {"field": "(encoding)"})
    assert (info.value.code, info.value.message, info.value.details) == (expected["code"], expected["message"], expected["details"])


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


def test_decode_refuses_what_is_not_a_bundle_with_bad_bundle(ts):
    good = encode_bundle(good_bundle())
    for name, data in {"truncated": good[:-3], "garbage": DECODED["garbage"], "a string that is not UTF-8": b"\x0a\x02\xff\xfe"}.items():
        with pytest.raises(FarmError) as info:
            decode_bundle(data)
        assert info.value.code == "BAD_BUNDLE", name
        assert info.value.message.startswith("not a kernelfarm module bundle: protobuf decoding failed ("), (name, info.value.message)
    assert ts["decode"]["garbage"]["message"].startswith("not a kernelfarm module bundle: protobuf decoding failed (")
    # No bytes at all decode to a message with every field empty: the first field validation names.
    with pytest.raises(FarmError) as info:
        decode_bundle(b"")
    assert (info.value.message, info.value.details) == (ts["decode"]["empty"]["message"], ts["decode"]["empty"]["details"])


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
