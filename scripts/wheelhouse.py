"""Wheels for an air-gapped GPU server: multimsd and every runtime dependency the target machine lacks.

    make wheelhouse PYTHON_VERSION=3.12                      # = python scripts/wheelhouse.py --python-version 3.12
    make wheelhouse PYTHON_VERSION=3.12 HAVE=target-freeze.txt   # what the target has: its `pip freeze`
    python scripts/wheelhouse.py --python-version 3.12 --only datasets hydra-core   # just these (no multimsd)

Hospital GPU servers often have no internet access, and a bare CUDA image (this project's GPU machines too) has
torch, transformers, peft, accelerate, ... but not datasets, hydra-core, omegaconf, antlr4, dill, multiprocess.
Run this where PyPI is reachable; carry ``wheelhouse/`` over; run the one install command it prints.

What goes in (:func:`select`): starting from multimsd's own requirements (read from the wheel it builds with
``python -m build --wheel``; or the ``--only`` names), the dependency graph is walked through the packages'
metadata, markers evaluated for the target (Linux x86-64, CPython ``--python-version``), extras honoured, and the
walk stops at every package the target already has (its own dependencies are its business: torch's CUDA
libraries are there with it). The graph comes from ``pip install --dry-run --report`` for the target's
interpreter and platforms (binary wheels only, so what is resolved is what can be installed there); with
``--have FILE`` (a ``pip freeze`` of the target) the target's versions are constraints of that resolution, so the
chosen versions work with what is installed. Without it the target is assumed to have :data:`BARE_CUDA_IMAGE`.

A package with no wheel at all (antlr4-python3-runtime 4.9.3, needed by hydra-core) is built into one here with
``pip wheel --no-deps``; only a pure-Python result (``py3-none-any``) is accepted, since it must run there.
Each selected package is then fetched with ``pip download --no-deps --only-binary=:all:`` for the target.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

_BARE_CUDA_IMAGE = """
absl-py accelerate aiofiles aiohappyeyeballs aiohttp aiosignal annotated-doc anyio attrs botorch build certifi
charset-normalizer chex click cloudpickle cmake colorama contourpy coverage cuda-bindings cuda-core cuda-pathfinder
cuda-toolkit cupy-cuda13x cycler cython diffrax e3nn einops equinox etils execnet filelock flatbuffers flax fonttools
formulaic frozenlist fsspec gpytorch grpcio h11 h5py hf-xet httpcore httpx huggingface-hub humanize hypothesis idna
imageio interface-meta iniconfig jax jax-cuda13-pjrt jax-cuda13-plugin jaxlib jaxtyping jinja2 joblib kiwisolver
lazy-loader lightning lightning-utilities linear-operator lineax llvmlite lxml markdown markdown-it-py markupsafe
matplotlib mdurl meson ml-dtypes mpi4py mpmath msgpack multidict multipledispatch mypy-extensions nanobind narwhals
networkx ninja numba numba-cuda numpy numpyro nvidia-cublas nvidia-cuda-cupti nvidia-cuda-nvrtc nvidia-cuda-runtime
nvidia-cudnn-cu13 nvidia-cufft nvidia-cufile nvidia-curand nvidia-cusolver nvidia-cusparse nvidia-cusparselt-cu13
nvidia-ml-py nvidia-nccl-cu13 nvidia-nvjitlink nvidia-nvshmem-cu13 nvidia-nvtx onnx onnx-ir onnxruntime onnxscript
opencv-python-headless optax opt-einsum opt-einsum-fx optimistix orbax-checkpoint packaging pandas pathspec patsy
peft pillow pip pluggy portalocker prometheus-client propcache protobuf psutil pyarrow pybind11 py-cpuinfo pygments
pyparsing pyproject-hooks pyre-extensions pytest pytest-benchmark pytest-cov pytest-mock pytest-timeout
pytest-xdist python-dateutil pytorch-lightning pyyaml regex requests rich sacrebleu safetensors scikit-build-core
scikit-image scikit-learn scipy seaborn sentencepiece sentence-transformers setuptools shellingham simplejson six
sortedcontainers statsmodels sympy tabulate tensorboard tensorboard-data-server tensorstore threadpoolctl tifffile
tiktoken timm tokenizers toolz torch torchaudio torchdiffeq torch-geometric torchmetrics torchvision tqdm
transformers treescope triton typer typing-extensions typing-inspect urllib3 uvloop wadler-lindig werkzeug wheel
wrapt xarray xxhash yarl zipp
"""
BARE_CUDA_IMAGE = _BARE_CUDA_IMAGE.split()
"""The packages of this project's bare CUDA image ('cuda', read on 2026-11-17; Python 3.12): the default target."""

MANYLINUX = [f"manylinux_2_{n}_x86_64" for n in range(39, 16, -1)] + [
    "manylinux2014_x86_64",
    "manylinux1_x86_64",
]
"""pip matches each platform tag exactly: every glibc level a wheel may be tagged with (2.17 .. 2.39)."""


class WheelhouseError(RuntimeError):
    """One line saying what failed (the script's only error)."""


def norm(name: str) -> str:
    """PEP 503's normalised project name: ``Hydra_Core`` -> ``hydra-core``."""
    return re.sub(r"[-_.]+", "-", name).lower()


def target_env(python_version: str) -> dict[str, str]:
    """The marker environment of a Linux x86-64 CPython ``python_version`` (e.g. "3.12")."""
    return {
        "python_version": python_version,
        "python_full_version": f"{python_version}.0",
        "implementation_name": "cpython",
        "implementation_version": f"{python_version}.0",
        "platform_python_implementation": "CPython",
        "os_name": "posix",
        "sys_platform": "linux",
        "platform_system": "Linux",
        "platform_machine": "x86_64",
        "platform_release": "",
        "platform_version": "",
        "extra": "",
    }


def parse_have(text: str) -> dict[str, str | None]:
    """A ``pip freeze`` (or one name a line): normalised name -> pinned version (None where unpinned, e.g.
    ``name @ file://...`` or a bare name). ``-e`` lines and comments are skipped."""
    have: dict[str, str | None] = {}
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        if not line or line.startswith("-"):
            continue
        if "==" in line and " @ " not in line:
            name, version = line.split("==", 1)
            have[norm(name.strip())] = version.strip().split(";")[0].strip() or None
        else:
            have[norm(re.split(r"[\s@<>=!~;\[]", line, maxsplit=1)[0])] = None
    return have


def select(
    roots: list[str], metadata: dict[str, dict], have: set[str], env: dict[str, str]
) -> dict[str, str]:
    """Which packages go into the wheelhouse: normalised name -> version, in the order first reached.

    ``roots`` are requirement strings (markers allowed); ``metadata`` maps a normalised name to the resolved
    package's ``{"version": ..., "requires_dist": [...]}`` (pip's installation report). A requirement whose
    marker is false for ``env`` (with the requesting package's extras) is skipped; a package in ``have`` is
    neither taken nor walked into."""
    from packaging.requirements import Requirement

    chosen: dict[str, str] = {}
    extras: dict[str, set[str]] = {}
    queue: list[tuple[str, set[str]]] = [(r, {""}) for r in roots]
    while queue:
        text, parent_extras = queue.pop(0)
        req = Requirement(text)
        if req.marker is not None and not any(
            req.marker.evaluate({**env, "extra": e}) for e in parent_extras
        ):
            continue
        name = norm(req.name)
        if name in have:
            continue
        if name not in metadata:
            raise WheelhouseError(f"{req.name}: required but not in the resolution (pip's report)")
        wanted = set(req.extras) - extras.get(name, set())
        if name in chosen and not wanted:
            continue
        chosen.setdefault(name, metadata[name]["version"])
        extras.setdefault(name, set()).update(wanted)
        for dep in metadata[name].get("requires_dist") or []:
            queue.append((dep, {""} | extras[name]))
    return chosen


def wheel_requirements(wheel: Path) -> list[str]:
    """The ``Requires-Dist`` lines of a wheel's METADATA."""
    with zipfile.ZipFile(wheel) as z:
        meta = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
        text = z.read(meta).decode("utf-8")
    head = text.split("\n\n", 1)[0]
    return [ln.split(":", 1)[1].strip() for ln in head.splitlines() if ln.startswith("Requires-Dist:")]


def target_flags(python_version: str) -> list[str]:
    flags = ["--only-binary=:all:", "--python-version", python_version, "--implementation", "cp"]
    for p in MANYLINUX:
        flags += ["--platform", p]
    return flags


def without_wheel(items: list[dict]) -> list[str]:
    """``name==version`` of each package of a pip report that was resolved to a source archive (no wheel)."""
    return [
        f"{i['metadata']['name']}=={i['metadata']['version']}"
        for i in items
        if not i.get("download_info", {}).get("url", "").endswith(".whl")
    ]


def build_pure_wheel(requirement: str, dest: Path) -> Path:
    """``pip wheel --no-deps`` of a package that has no wheel; it must come out pure Python (``py3-none-any``)."""
    with tempfile.TemporaryDirectory() as tmp:
        run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", tmp, requirement])
        built = list(Path(tmp).glob("*.whl"))
        if len(built) != 1 or not built[0].name.endswith("-none-any.whl"):
            names = ", ".join(b.name for b in built) or "nothing"
            raise WheelhouseError(
                f"{requirement}: no wheel on PyPI and the build is not pure Python ({names})"
            )
        target = dest / built[0].name
        built[0].replace(target)
    return target


def run(cmd: list[str]) -> subprocess.CompletedProcess:
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise WheelhouseError(
            f"{' '.join(cmd[:6])} ...: {(proc.stderr.strip().splitlines() or ['failed'])[-1]}"
        )
    return proc


def pip_report(roots: list[str], pins: dict, dest: Path, python_version: str | None) -> list[dict]:
    """The packages pip would install for ``roots`` (``--dry-run --report``), ``pins`` as constraints, wheels in
    ``dest`` seen; for the target (``python_version``: binary wheels for it only) or, None, for this Python."""
    with tempfile.TemporaryDirectory() as tmp:
        report, cons = Path(tmp) / "report.json", Path(tmp) / "constraints.txt"
        # a local version label (torch 2.11.0+cu130) is not on PyPI: constrain to the public version
        cons.write_text("".join(f"{n}=={v.split('+')[0]}\n" for n, v in pins.items() if v), encoding="utf-8")
        cmd = [sys.executable, "-m", "pip", "install", "--dry-run", "--quiet", "--ignore-installed"]
        cmd += ["--report", str(report), "-c", str(cons), "--find-links", str(dest)]
        if python_version is not None:
            cmd += ["--target", str(Path(tmp) / "t"), *target_flags(python_version)]
        proc = subprocess.run(cmd + roots, capture_output=True, text=True)
        if proc.returncode != 0:
            where = f"Python {python_version} (wheels only)" if python_version else "this Python"
            last = (proc.stderr.strip().splitlines() or ["failed"])[-1]
            raise WheelhouseError(f"pip could not resolve {' '.join(roots)} for {where}: {last}")
        return json.loads(report.read_text(encoding="utf-8"))["install"]


def resolve(roots: list[str], python_version: str, pins: dict, dest: Path) -> dict[str, dict]:
    """The resolution for the target: normalised name -> {version, requires_dist}.

    Resolved for the target straight away, pip would quietly fall back to an old release of a package whose
    requirement has no wheel (hydra-core 0.11 instead of 1.3, for antlr4 4.9.3). So first for this Python,
    source archives allowed: the packages it resolves to a source archive are built into pure-Python wheels
    in ``dest``; then for the target, wheels only, with the versions of the first pass pinned (a version with
    no wheel for the target is then an error, not a silent downgrade)."""
    first = pip_report(roots, pins, dest, None)
    for req in without_wheel(first):
        name = norm(req.split("==")[0])
        if not any(norm(p.name.split("-")[0]) == name for p in dest.glob("*.whl")):
            print(f"wheelhouse: {req} has no wheel: building a pure-Python one", flush=True)
            build_pure_wheel(req, dest)
    pinned = {**{norm(i["metadata"]["name"]): i["metadata"]["version"] for i in first}, **pins}
    return {
        norm(i["metadata"]["name"]): i["metadata"] for i in pip_report(roots, pinned, dest, python_version)
    }


def install_commands(dest: str) -> list[str]:
    """The two ways to install the wheelhouse on the target, everything from the folder, nothing fetched."""
    return [
        f"python3 -m pip install --no-index --no-deps {dest}/*.whl",
        f"python3 -m pip install --no-index --no-deps --target /tmp/site {dest}/*.whl && "
        "export PYTHONPATH=/tmp/site  # a read-only system Python",
    ]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--python-version", default="3.12", help="the target's Python (default 3.12)")
    ap.add_argument(
        "--have", type=Path, help="the target's `pip freeze` (default: the bare CUDA image's list)"
    )
    ap.add_argument("--dest", type=Path, default=ROOT / "wheelhouse", help="default: wheelhouse/")
    ap.add_argument("--only", nargs="+", help="these requirements instead of multimsd's (no multimsd wheel)")
    args = ap.parse_args(argv)
    dest = args.dest.resolve()
    if args.have and not args.have.is_file():
        print(
            f"wheelhouse: --have {args.have}: no such file (the target's `pip freeze` output)",
            file=sys.stderr,
        )
        return 2
    created = not dest.exists()
    dest.mkdir(parents=True, exist_ok=True)
    try:
        have = (
            parse_have(args.have.read_text(encoding="utf-8")) if args.have else dict.fromkeys(BARE_CUDA_IMAGE)
        )
        if args.only:
            roots = list(args.only)
        else:
            run([sys.executable, "-m", "build", "--wheel", "--outdir", str(dest), str(ROOT)])
            roots = wheel_requirements(max(dest.glob("multimsd-*.whl"), key=lambda p: p.stat().st_mtime))
        metadata = resolve(roots, args.python_version, have, dest)
        chosen = select(roots, metadata, set(have), target_env(args.python_version))
        present = {norm(p.name.split("-")[0]) for p in dest.glob("*.whl")}
        for name, version in chosen.items():
            if name not in present:
                run(
                    [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "-d", str(dest)]
                    + target_flags(args.python_version)
                    + [f"{name}=={version}"]
                )
    except WheelhouseError as e:
        print(f"wheelhouse: {e}", file=sys.stderr)
        if created and not any(dest.iterdir()):
            dest.rmdir()  # nothing half-made left behind
        return 2
    wheels = sorted(dest.glob("*.whl"))
    size = sum(w.stat().st_size for w in wheels)
    print(f"wheelhouse: {len(wheels)} wheels, {size / 2**20:.1f} MiB in {dest}")
    for w in wheels:
        print(f"  {w.name}")
    print("On the target (no internet needed), one of:")
    for c in install_commands(str(dest.name if dest.parent == Path.cwd() else dest)):
        print(f"  {c}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
