"""Task environments and the hardened tier: what images and gVisor cost, in one run.

Measures, on this machine and in the same process:
  * ``image_build_s``: building a minimal Debian image (bullseye, Python 3.9) from scratch
    with mmdebstrap, into a fresh store (the mirror's download included);
  * ``image_import_s``: importing that root file system as an OCI archive (a tar layer
    plus a whiteout layer, assembled here) into a fresh store;
  * ``image_run_p50_ms`` vs ``host_run_p50_ms``: a warm ``print(1)`` on the image's root
    and on the host's, rounds interleaved so background noise hits both alike;
  * ``gvisor_run_p50_ms`` (warm: a pool of started gVisor sandboxes, a fork per run) vs
    ``gvisor_cold_ms`` (``runsc do python3 -c 'print(1)'``: a sandbox started per run).
Targets: image runs within 1.2x of host runs; warm gVisor at least 5x faster than cold.
Ends with one JSON line.

    .venv/bin/python benchmarks/environments.py [--runs 200] [--gvisor-runs 60] [--cold 5]
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import shutil
import statistics
import subprocess
import tarfile
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from assay import Runner
from assay.images import ImageSpec, ImageStore, build_image, import_image
from assay.sandbox import SandboxConfig
from assay.sandbox.gvisor import available

SPEC = ImageSpec(name="bench-py39", suite="bullseye", packages=("python3",))


def _ms(samples: list[float]) -> float:
    return round(statistics.median(samples) * 1000, 2)


def _timed(fn: Callable[[], object], n: int) -> list[float]:
    out = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return out


def _oci(rootfs: str, path: Path) -> Path:
    """An OCI layout tar: the root file system as one layer, and a layer deleting perl."""
    base = io.BytesIO()
    with tarfile.open(fileobj=base, mode="w") as tar:
        for entry in sorted(os.listdir(rootfs)):
            tar.add(os.path.join(rootfs, entry), arcname=entry)
    top = io.BytesIO()
    with tarfile.open(fileobj=top, mode="w") as tar:
        tar.addfile(tarfile.TarInfo("usr/bin/.wh.perl"), io.BytesIO(b""))
    blobs = {}
    for data in (base.getvalue(), top.getvalue()):
        blobs["sha256:" + hashlib.sha256(data).hexdigest()] = data
    cfg = b'{"architecture": "amd64", "os": "linux", "config": {}}'
    cfg_digest = "sha256:" + hashlib.sha256(cfg).hexdigest()
    manifest = json.dumps(
        {
            "schemaVersion": 2,
            "config": {"digest": cfg_digest, "size": len(cfg)},
            "layers": [{"digest": d, "size": len(b)} for d, b in blobs.items()],
        }
    ).encode()
    man_digest = "sha256:" + hashlib.sha256(manifest).hexdigest()
    blobs[cfg_digest], blobs[man_digest] = cfg, manifest
    index = json.dumps({"schemaVersion": 2, "manifests": [{"digest": man_digest}]}).encode()
    with tarfile.open(path, "w") as tar:
        for name, data in (
            ("oci-layout", b'{"imageLayoutVersion":"1.0.0"}'),
            ("index.json", index),
        ):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        for digest, data in blobs.items():
            info = tarfile.TarInfo("blobs/sha256/" + digest.split(":")[1])
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=200, help="warm runs per side (image, host)")
    ap.add_argument("--gvisor-runs", type=int, default=60, help="warm gVisor runs")
    ap.add_argument("--cold", type=int, default=5, help="cold `runsc do` runs")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="assay-bench-env-"))
    try:
        store = ImageStore(work / "built")
        t = time.perf_counter()
        built = build_image(SPEC, store)
        image_build_s = time.perf_counter() - t
        archive = _oci(built.path, work / "bench.oci.tar")
        imported_store = ImageStore(work / "imported")
        t = time.perf_counter()
        imported = import_image(str(archive), imported_store, name="bench-import")
        image_import_s = time.perf_counter() - t
        print(f"image build {image_build_s:.1f} s, import {image_import_s:.1f} s")

        code = "print(1)"
        host_s: list[float] = []
        image_s: list[float] = []
        with Runner() as runner:
            runner.images.store = store
            assert runner.run(code, image=built.id).stdout == b"1\n"  # warm both pools
            assert runner.run(code).stdout == b"1\n"
            for _ in range(10):  # interleaved rounds
                host_s += _timed(lambda: runner.run(code), args.runs // 10)
                image_s += _timed(lambda: runner.run(code, image=built.id), args.runs // 10)
        host_ms, image_ms = _ms(host_s), _ms(image_s)
        print(f"print(1) warm: host {host_ms} ms, image {image_ms} ms")

        gvisor_ms = cold_ms = None
        ok, why = available()
        if ok:
            with Runner(config=SandboxConfig(isolation="gvisor")) as gv:
                gv.warm_up(2)
                assert gv.run(code).stdout == b"1\n"
                gvisor_ms = _ms(_timed(lambda: gv.run(code), args.gvisor_runs))
            root = work / "runsc"

            def cold() -> None:
                out = subprocess.run(
                    ["runsc", f"--root={root}", "--network=none", "do", "python3", "-c", code],
                    capture_output=True,
                    cwd=work,
                    check=True,
                )
                assert out.stdout == b"1\n", out

            cold()
            cold_ms = _ms(_timed(cold, args.cold))
            print(f"gVisor print(1): warm {gvisor_ms} ms, cold `runsc do` {cold_ms} ms")
        else:
            print(f"gVisor tier unavailable: {why}")
        assert imported.python == built.python
    finally:
        shutil.rmtree(work, ignore_errors=True)
    result = {
        "image_build_s": round(image_build_s, 1),
        "image_import_s": round(image_import_s, 2),
        "image_run_p50_ms": image_ms,
        "host_run_p50_ms": host_ms,
        "image_vs_host": round(image_ms / host_ms, 3),
        "gvisor_run_p50_ms": gvisor_ms,
        "gvisor_cold_ms": cold_ms,
        "gvisor_warm_speedup": round(cold_ms / gvisor_ms, 1) if gvisor_ms and cold_ms else None,
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
