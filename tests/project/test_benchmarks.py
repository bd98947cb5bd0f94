"""benchmarks/gpu_bench.py keeps working and keeps its promises: each measurement in a fresh process, the two
loops alternated, a ratio only where the first-step losses agree, a profile per step; its CPU mode runs the GPU
code paths on tiny models."""

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from helpers.tables import markdown_table, rows_by

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("gpu_bench", ROOT / "benchmarks" / "gpu_bench.py")
gb = importlib.util.module_from_spec(spec)
spec.loader.exec_module(gb)


def test_the_loops_alternate_so_each_goes_first_as_often():
    assert gb.alternating(1) == ["ours", "trainer"]
    assert gb.alternating(2) == ["ours", "trainer", "trainer", "ours"]
    order = gb.alternating(4)
    firsts = [order[k] for k in range(0, 8, 2)]
    assert firsts.count("ours") == firsts.count("trainer") == 2


def test_no_ratio_when_the_first_step_losses_differ():
    ours = {"first_loss": 12.5363, "tokens_per_s": 5970.0}
    assert gb.ratio_cell(ours, {"first_loss": 12.5363, "tokens_per_s": 6362.0}) == "0.94×"
    # 1 % relative: mBART's dropout draws (12.6469 vs 12.6591 on the H200) pass, other batches do not
    assert gb.ratio_cell(
        {**ours, "first_loss": 12.6469}, {"first_loss": 12.6591, "tokens_per_s": 1.0}
    ).endswith("×")
    cell = gb.ratio_cell(ours, {"first_loss": 11.9, "tokens_per_s": 6362.0})
    assert cell.startswith("no ratio: first-step losses differ") and "×" not in cell
    assert (
        gb.ratio_cell(None, {"first_loss": 1.0, "tokens_per_s": 1.0})
        == "no ratio: a run failed or was not run"
    )


def test_best_of_the_runs_skips_failed_ones():
    runs = [{"tokens_per_s": 5.0}, {"error": "CUDA out of memory"}, {"tokens_per_s": 7.0}]
    assert gb.best(runs) == {"tokens_per_s": 7.0}
    assert gb.best([{"error": "x"}]) is None


def test_syncs_are_counted_by_the_blocking_runtime_calls():
    class E:
        def __init__(self, name):
            self.name = name

    names = [
        "cudaLaunchKernel",
        "cudaMemcpyAsync",
        "cudaStreamSynchronize",
        "cudaMemcpy",
        "cudaEventSynchronize",
    ]
    names += ["cudaDeviceSynchronize", "cudaStreamSynchronize", "aten::item"]
    assert gb.count_syncs([E(n) for n in names]) == 5


def test_the_profiler_window_is_counted_in_optimizer_steps():
    """The global optimizer-step hook opens the window after `after` steps and closes it after `steps` more;
    on CPU the summary is the top CPU ops per step and no sync count."""
    model = torch.nn.Linear(8, 8)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    prof = gb.StepProfiler(after=2, steps=3)
    try:
        for _ in range(8):
            model(torch.randn(4, 8)).pow(2).sum().backward()
            opt.step()
            opt.zero_grad()
    finally:
        prof.finish()
    p = prof.summary
    assert p["steps"] == 3 and p["complete"] and p["syncs"] is None and 0 < len(p["top"]) <= gb.TOP
    addmm = next(t for t in p["top"] if t["name"] == "aten::addmm")
    assert addmm["calls"] == pytest.approx(1.0)  # one forward matmul a step (its backward is mm)
    short = gb.StepProfiler(after=1, steps=5)  # the run ends before the window closes: said so
    for _ in range(3):
        model(torch.randn(4, 8)).sum().backward()
        opt.step()
    short.finish()
    assert short.summary["steps"] == 2 and not short.summary["complete"]


def test_overrides_are_merged_generically(tmp_path):
    """A key=value override lands in the train config whether or not this branch's schema has the key yet."""
    from multimsd.errors import MultimsdError
    from multimsd.training.loop import to_train_config

    spec = {
        "setup": gb.CPU["llama"],
        "languages": ["en"],
        "examples": 4,
        "batch": 2,
        "accum": 2,
        "out": str(tmp_path),
        "overrides": ["data.packing=true", "optim.lr=0.001"],
    }
    cfg = to_train_config(gb.train_cfg(spec))
    assert cfg.data.packing is True and cfg.optim.lr == 0.001 and cfg.data.shuffle is False
    # a decoding measurement keeps the default eval settings (merge_lora, max_batch_tokens) but for its own
    # length and beams, and takes its overrides (eval.backend=... once that key exists)
    dec = to_train_config(
        gb.train_cfg({**spec, "max_new": 7, "beams": 5, "overrides": ["eval.batch_size=3"]})
    )
    assert (dec.eval.max_new_tokens, dec.eval.num_beams, dec.eval.batch_size) == (7, 5, 3)
    assert (
        dec.eval.merge_lora is True and dec.eval.max_batch_tokens == to_train_config({}).eval.max_batch_tokens
    )
    assert to_train_config(gb.train_cfg(spec)).eval.merge_lora is False  # training: no 14 GiB host copy
    bad = gb.train_cfg({**spec, "overrides": ["model.no_such_key=1"]})
    assert bad.model.no_such_key == 1
    with pytest.raises(MultimsdError, match="no_such_key"):
        to_train_config(bad)


def test_commit_without_git_comes_from_the_environment(monkeypatch, tmp_path):
    monkeypatch.setattr(gb, "ROOT", tmp_path)
    monkeypatch.setenv("MULTIMSD_COMMIT", "5f6c4ff")
    assert gb.commit() == "5f6c4ff"
    monkeypatch.delenv("MULTIMSD_COMMIT")
    assert gb.commit() == "unknown"


def run_bench(*args, cwd):
    proc = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "gpu_bench.py"), "--quick", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout[proc.stdout.index("## gpu_bench on CPU") :]


@pytest.mark.e2e
def test_gpu_bench_runs_on_cpu(tmp_path):
    out = tmp_path / "bench.md"
    # the GPU command's languages (ja left out): tiny:llama's byte tokenizer once kept no example of them
    langs = "de,en,es,fr,it,pt,ru,zh"
    table = run_bench("--models", "llama", "--languages", langs, "--out", str(out), cwd=tmp_path)
    assert out.read_text().strip() == table.strip()
    assert "commit " in table and "torch " in table and "transformers " in table and "wall time:" in table
    rows = rows_by(table, "measurement")  # by the first column: each row by column header
    train = next(row for k, row in rows.items() if "training tokens/s, batch 2 × 2" in k)
    assert train["ratio"].endswith("×")  # a ratio: the first-step losses agreed
    first = next(row for k, row in rows.items() if "first-step loss" in k)
    # same batches, same weights: equal
    assert first["multimsd"] == first["reference"] and first["ratio"] == "equal", first
    assert any("ours, batch 4 × 1" in k for k in rows)  # 32 × 1 on a GPU: the same examples a step
    assert any("ours, data.packing=true" in k for k in rows)
    assert any("one checkpoint" in k for k in rows)
    decode = next(k for k in rows if "decoding new tokens/s, ours, default" in k)
    n = decode.split("outputs equal to plain: ")[1].split(")")[0]
    assert n == "8/8"  # float32 tiny model, greedy: our batching decodes the plain path's tokens

    data = json.loads(out.with_suffix(".json").read_text())
    procs = [p["what"] for p in data["processes"]]
    assert procs[:4] == ["train-ours", "train-trainer", "train-trainer", "train-ours"]  # alternated
    assert procs.count("decode-plain") == 1 and procs.count("decode-ours") == 1 and "checkpoint" in procs
    # each process's result was kept as it came (a run cut off by a time limit keeps what it finished)
    progress = [json.loads(ln) for ln in out.with_suffix(".progress.jsonl").read_text().splitlines()]
    assert [p["what"] for p in progress] == procs
    assert progress[0]["result"]["first_loss"] == data["rows"]["llama training"]["ours"][0]["first_loss"]
    runs = data["rows"]["llama training"]
    # every fresh process saw the same first batch with the same weights: one loop's runs bit-identical, the
    # two loops equal up to float rounding (they sum the same token losses in a different order)
    for side in runs.values():
        assert len({r["first_loss"] for r in side}) == 1, runs
    ours, trainer = runs["ours"][0]["first_loss"], runs["trainer"][0]["first_loss"]
    assert ours == pytest.approx(trainer, rel=1e-6)
    for side in runs.values():
        for r in side:  # the clock covers every step; the warm-up step is left out of tokens/s
            assert len(r["step_seconds"]) == r["steps"] == len(r["step_tokens"])
            timed = sum(r["step_tokens"][1:]) / sum(r["step_seconds"][1:])
            assert r["tokens_per_s"] == pytest.approx(timed)


@pytest.mark.e2e
def test_gpu_bench_qlora_rows_on_cpu(tmp_path):
    """--models qlora: the 8B QLoRA rows (training only: tokens/s, first-step loss, peak memory), run for real on
    tiny:llama quantized to NF4 by bitsandbytes' CPU backend; ours and the Trainer train the same quantized model."""
    pytest.importorskip("bitsandbytes", reason="the qlora extra")
    out = tmp_path / "bench.md"
    table = run_bench("--models", "qlora", "--repeats", "1", "--out", str(out), cwd=tmp_path)
    rows = markdown_table(table, column="measurement")
    assert [r["measurement"] for r in rows] == [
        "tiny:llama + LoRA on a 4-bit NF4 base (QLoRA) training tokens/s, batch 2 × 2 (best of 1)",
        "tiny:llama + LoRA on a 4-bit NF4 base (QLoRA) first-step loss",
        "tiny:llama + LoRA on a 4-bit NF4 base (QLoRA) peak RSS of the process (GiB)",
    ]
    assert rows[0]["ratio"].endswith("×") and rows[1]["ratio"] == "equal", rows
    procs = [p["what"] for p in json.loads(out.with_suffix(".json").read_text())["processes"]]
    assert procs == ["train-ours", "train-trainer"]  # no decoding, packing or checkpoint rows


@pytest.mark.e2e
def test_gpu_bench_profile_on_cpu(tmp_path):
    table = run_bench("--models", "llama", "--profile", "--profile-steps", "2", cwd=tmp_path)
    assert "| llama ours | 2 | n/a (CPU) |" in table and "| llama trainer | 2 | n/a (CPU) |" in table
    for side in ("ours", "trainer"):
        section = table.split(f"### llama, {side}: top {gb.TOP} CPU ops (self time) per step")[1]
        ops = markdown_table(section.split("###")[0], column="ms / step")
        assert len(ops) == gb.TOP and all(op["name"].startswith("`") for op in ops)
        ms = [float(op["ms / step"]) for op in ops]
        assert ms == sorted(ms, reverse=True)


@pytest.mark.integration
def test_deadline_starts_nothing_after_it_and_still_prints_the_table(tmp_path):
    """--deadline 0: no measurement starts; the table, its JSON and the exit status say so (a lent GPU's call
    limit must not cost the rows already measured: the table always comes out)."""
    out = tmp_path / "bench.md"
    proc = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "gpu_bench.py"), "--quick", "--deadline", "0"]
        + ["--models", "mbart", "--models", "llama", "--only", "checkpoint", "--out", str(out)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 1, proc.stderr[-2000:]
    table = out.read_text()
    rows = [ln for ln in table.splitlines() if ln.startswith("| tiny")]
    # the models in the order given, each row "not run"
    assert [r.split("|")[1].split()[0] for r in rows] == ["tiny:mbart", "tiny:llama"]
    assert all("not run: --deadline 0 s had passed" in r for r in rows)
    assert "wall time: " in table and "(0 processes)" in table
    assert "not run (--deadline 0 s): checkpoint mbart checkpoint, checkpoint llama checkpoint" in table
    assert json.loads(out.with_suffix(".json").read_text())["processes"] == []
    assert out.with_suffix(".progress.jsonl").read_text() == ""


def load_train_bench():
    sys.path.insert(0, str(ROOT / "benchmarks"))  # as when run as a script: gpu_bench beside it
    try:
        s = importlib.util.spec_from_file_location("train_bench", ROOT / "benchmarks" / "train_bench.py")
        tb = importlib.util.module_from_spec(s)
        s.loader.exec_module(tb)
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    return tb


def test_train_bench_rotates_fresh_processes_and_refuses_other_batches(monkeypatch):
    """The CPU benchmark's three runs go through gpu_bench's worker processes in rotated order, each side keeps
    its fastest run, and no ratio comes out when the two loops' steps held other tokens."""
    tb = load_train_bench()
    calls = []
    tps = iter([100.0, 90.0, 50.0, 80.0, 70.0, 95.0])  # per call, in call order

    def fake_spawn(what, spec, work, log):
        calls.append((what, spec["label"], spec["overrides"]))
        tokens = [10, 12, 9] if calls[-1][1] != "trainer" or not fake_spawn.other else [10, 12, 8]
        return {"tokens_per_s": next(tps), "first_loss": 2.5, "step_tokens": tokens}

    fake_spawn.other = False
    monkeypatch.setattr(tb.gpu_bench, "spawn", fake_spawn)
    best = tb.trainer_comparison("tiny_llama", 8, 4, 2, 1, ["loss.chunked=false"])
    assert [c[1] for c in calls] == ["plain", "weighted", "trainer", "weighted", "trainer", "plain"]
    assert {c[0] for c in calls if c[1] == "trainer"} == {"train-trainer"}
    plain = next(c[2] for c in calls if c[1] == "plain")
    assert "loss.theta=1" in plain and "loss.chunked=false" in plain and "data.mode=mono" in plain
    assert "loss.theta=4" in next(c[2] for c in calls if c[1] == "weighted")
    assert not any("loss." in o for c in calls if c[1] == "trainer" for o in c[2])  # the plain 🤗 reference
    assert {k: r["tokens_per_s"] for k, r in best.items()} == {
        "plain": 100.0,
        "weighted": 90.0,
        "trainer": 70.0,
    }

    calls.clear()
    tps = iter([100.0] * 3)
    fake_spawn.other = True
    with pytest.raises(SystemExit, match="did not see the same batches"):
        tb.trainer_comparison("tiny_llama", 8, 4, 1, 1, [])


@pytest.mark.e2e
def test_train_bench_runs_on_cpu(tmp_path):
    proc = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "train_bench.py"), "--model", "tiny_llama"]
        + ["--examples", "8", "--batch-size", "4", "--repeats", "1"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = dict(ln.split(":", 1) for ln in proc.stdout.splitlines() if ":" in ln and not ln.startswith("#"))
    ours, trainer = (float(x) for x in lines["first-step loss, ours/Trainer"].split("(")[0].split("/"))
    assert ours == pytest.approx(trainer, rel=1e-4)  # the same first batch and weights
    assert float(lines["ours / Trainer               "].split("x")[0]) > 0
    # one fresh process per run, each announced as it ends
    assert [ln.split(":")[0] for ln in proc.stderr.splitlines() if ln.startswith("[gpu_bench]")] == [
        "[gpu_bench] train-ours plain",
        "[gpu_bench] train-ours weighted",
        "[gpu_bench] train-trainer trainer",
    ]
