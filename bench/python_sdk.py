"""The Python SDK's side of `npm run bench -- python` (bench/python.ts): one
round on one session — a 64 MiB upload, then nop calls — timed here, in the
host process, as bench/python.ts times the TypeScript SDK's.

    python3 bench/python_sdk.py TRACKER ROUTE MODULE_FILE UPLOAD_BYTES WARMUP CALLS

After loading the module it prints "loaded" and waits for a line on stdin,
so the orchestrator can let the worker's successor finish booting before
anything is timed. Then one JSON line: the lane, the upload's milliseconds
and each call's.
"""
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))

import kernelfarm  # noqa: E402


def main(tracker: str, route: str, module_file: str, upload_bytes: str, warmup: str, calls: str) -> None:
    payload = bytes(int(upload_bytes))
    with open(module_file, "rb") as f:
        module = f.read()
    with kernelfarm.connect_tracker(tracker) as client, client.request("cpu", route=route) as s:
        t0 = time.perf_counter()
        s.upload(payload, "blob.bin")
        upload_ms = (time.perf_counter() - t0) * 1e3
        s.upload(module, "nop.kfm")
        nop = s.load_module("nop.kfm")["nop"]
        print("loaded", flush=True)
        sys.stdin.readline()
        for _ in range(int(warmup)):
            nop()
        timed = []
        for _ in range(int(calls)):
            t = time.perf_counter()
            nop()
            timed.append((time.perf_counter() - t) * 1e3)
        print(json.dumps({"lane": s.lane, "upload_ms": upload_ms, "calls_ms": timed}), flush=True)


if __name__ == "__main__":
    main(*sys.argv[1:])
