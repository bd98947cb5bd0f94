"""scripts/wheelhouse.py: which packages go into the wheelhouse of an air-gapped GPU server (no network), and
one real run for a small closure (``package`` marker: it downloads from PyPI)."""

import importlib.util
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("wheelhouse", ROOT / "scripts" / "wheelhouse.py")
wh = importlib.util.module_from_spec(spec)
sys.modules["wheelhouse"] = wh
spec.loader.exec_module(wh)

ENV = wh.target_env("3.12")

# A made-up resolution shaped like pip's installation report (normalised name -> metadata).
META = {
    "datasets": {
        "version": "4.0.0",
        "requires_dist": [
            "dill<0.4.1,>=0.3.0",
            "multiprocess<0.70.17",
            "fsspec[http]<=2025.3.0,>=2023.1.0",
            "pyarrow>=15.0.0",
            "pytest; extra == 'tests'",
        ],
    },
    "dill": {"version": "0.3.8", "requires_dist": ["gprof2dot>=2022.7.29; extra == 'graph'"]},
    "multiprocess": {"version": "0.70.16", "requires_dist": ["dill>=0.3.8"]},
    "fsspec": {
        "version": "2025.3.0",
        "requires_dist": ["aiohttp!=4.0.0a0; extra == 'http'", "adlfs; extra == 'abfs'"],
    },
    "aiohttp": {
        "version": "3.12.0",
        "requires_dist": ["yarl<2.0,>=1.17.0", "async-timeout; python_version < '3.11'"],
    },
    "yarl": {"version": "1.20.0", "requires_dist": ["idna>=2.0"]},
    "idna": {"version": "3.10", "requires_dist": []},
    "async-timeout": {"version": "5.0.1", "requires_dist": []},
    "hydra-core": {
        "version": "1.3.2",
        "requires_dist": ["omegaconf<2.4,>=2.2", "antlr4-python3-runtime==4.9.*"],
    },
    "omegaconf": {"version": "2.3.0", "requires_dist": ["antlr4-python3-runtime==4.9.*", "PyYAML>=5.1.0"]},
    "antlr4-python3-runtime": {"version": "4.9.3", "requires_dist": []},
    "pyyaml": {"version": "6.0.2", "requires_dist": []},
    "pyarrow": {"version": "20.0.0", "requires_dist": []},
    "pywin32": {"version": "310", "requires_dist": []},
}


def test_select_walks_the_graph_and_stops_at_what_the_target_has():
    have = {"pyarrow", "pyyaml", "aiohttp"}
    got = wh.select(["datasets>=3.0", "hydra-core>=1.3.2"], META, have, ENV)
    # fsspec is taken (not in have) but its http extra leads only to aiohttp, which the target has: not walked
    assert got == {
        "datasets": "4.0.0",
        "hydra-core": "1.3.2",
        "dill": "0.3.8",
        "multiprocess": "0.70.16",
        "fsspec": "2025.3.0",
        "omegaconf": "2.3.0",
        "antlr4-python3-runtime": "4.9.3",
    }


def test_select_honours_extras_and_markers_of_the_target():
    # without aiohttp on the target, fsspec[http] pulls it and its own requirements; async-timeout is for
    # Python < 3.11 only, pytest is datasets' "tests" extra, adlfs fsspec's "abfs" extra: none of them
    got = wh.select(["datasets"], META, {"pyarrow"}, ENV)
    assert {"aiohttp", "yarl", "idna"} <= set(got)
    assert not {"async-timeout", "pytest", "adlfs", "gprof2dot"} & set(got)
    got_311 = wh.select(["datasets"], META, {"pyarrow"}, wh.target_env("3.10"))
    assert "async-timeout" in got_311
    # a root's own marker: a Windows-only requirement is not taken for a Linux target
    assert wh.select(["pywin32; sys_platform == 'win32'", "idna"], META, set(), ENV) == {"idna": "3.10"}


def test_select_names_are_normalised_and_a_missing_package_is_one_error():
    assert wh.select(["Hydra_Core"], META, {"omegaconf"}, ENV) == {
        "hydra-core": "1.3.2",
        "antlr4-python3-runtime": "4.9.3",
    }
    with pytest.raises(wh.WheelhouseError, match="not-resolved"):
        wh.select(["not-resolved"], META, set(), ENV)


def test_parse_have_reads_a_pip_freeze():
    freeze = "\n".join(
        [
            "# pip freeze of the GPU box",
            "torch==2.11.0+cu130",
            "Sentence_Transformers==6.0.1",
            "mylib @ file:///tmp/mylib-1.0-py3-none-any.whl",
            "-e git+https://example.org/x.git#egg=x",
            "numpy",
        ]
    )
    assert wh.parse_have(freeze) == {
        "torch": "2.11.0+cu130",
        "sentence-transformers": "6.0.1",
        "mylib": None,
        "numpy": None,
    }


def test_the_default_target_lacks_what_the_bench_needs():
    have = set(wh.BARE_CUDA_IMAGE)
    assert {
        "torch",
        "transformers",
        "peft",
        "accelerate",
        "pyarrow",
        "xxhash",
        "sentence-transformers",
    } <= have
    assert (
        not {"datasets", "hydra-core", "omegaconf", "antlr4-python3-runtime", "dill", "multiprocess"} & have
    )
    assert all(n == wh.norm(n) for n in wh.BARE_CUDA_IMAGE)


def test_without_wheel_names_the_source_archives_of_a_report():
    items = [
        {
            "metadata": {"name": "hydra-core", "version": "1.3.2"},
            "download_info": {"url": "https://x/hydra_core-1.3.2-py3-none-any.whl"},
        },
        {
            "metadata": {"name": "antlr4-python3-runtime", "version": "4.9.3"},
            "download_info": {"url": "https://x/antlr4-python3-runtime-4.9.3.tar.gz"},
        },
    ]
    assert wh.without_wheel(items) == ["antlr4-python3-runtime==4.9.3"]


def test_wheel_requirements_and_install_commands(tmp_path):
    whl = tmp_path / "demo-1.0-py3-none-any.whl"
    with zipfile.ZipFile(whl, "w") as z:
        z.writestr(
            "demo-1.0.dist-info/METADATA",
            "Metadata-Version: 2.4\nName: demo\nVersion: 1.0\nRequires-Dist: torch>=2.3\n"
            'Requires-Dist: pytest>=8; extra == "dev"\n\nRequires-Dist: not a header\n',
        )
    assert wh.wheel_requirements(whl) == ["torch>=2.3", 'pytest>=8; extra == "dev"']
    plain, target = wh.install_commands("wheelhouse")
    assert "--no-index" in plain and "--no-deps" in plain and "wheelhouse/*.whl" in plain
    assert "--target /tmp/site" in target and "PYTHONPATH=/tmp/site" in target


@pytest.mark.package
def test_wheelhouse_downloads_a_closure_for_python_312(tmp_path):
    """Needs PyPI: hydra-core's closure for a Python 3.12 target that has PyYAML (antlr4 4.9.3 has no wheel:
    built here, pure Python)."""
    have = tmp_path / "have.txt"
    have.write_text("PyYAML==6.0.2\npackaging==24.2\n")
    dest = tmp_path / "wh"
    proc = subprocess.run(
        [
            sys.executable,
            str(ROOT / "scripts" / "wheelhouse.py"),
            "--python-version",
            "3.12",
            "--have",
            str(have),
            "--dest",
            str(dest),
            "--only",
            "hydra-core==1.3.2",
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr
    names = sorted(wh.norm(p.name.split("-")[0]) for p in dest.glob("*.whl"))
    assert names == ["antlr4-python3-runtime", "hydra-core", "omegaconf"]
    assert next(dest.glob("hydra_core-1.3.2-*.whl"))  # not an old release without the antlr4 requirement
    assert next(dest.glob("antlr4_python3_runtime-4.9.3-*.whl")).name.endswith("py3-none-any.whl")
    assert "--no-index" in proc.stdout


def test_bad_input_is_one_line_and_leaves_nothing(tmp_path):
    script = Path(__file__).resolve().parents[2] / "scripts" / "wheelhouse.py"
    dest = tmp_path / "wh"
    proc = subprocess.run(
        [sys.executable, str(script), "--have", str(tmp_path / "missing.txt"), "--dest", str(dest)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        f"wheelhouse: --have {tmp_path / 'missing.txt'}: no such file (the target's `pip freeze` output)"
    ]
    assert not dest.exists()
