"""Every notebook runs top to bottom in a fresh kernel, and is committed without outputs."""

from __future__ import annotations

import os

import numpy as np
import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")

from conftest import REPO  # noqa: E402

NOTEBOOKS = sorted((REPO / "notebooks").glob("*.ipynb"))


def test_the_expected_notebooks_exist():
    names = [p.stem for p in NOTEBOOKS]
    assert "01-quickstart" in names and "02-why-batch-size-matters" in names


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_committed_without_outputs(path):
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None, f"{path.name}: clear outputs before committing"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_executes(path, monkeypatch):
    # The kernel imports this checkout's specsim, installed or not.
    monkeypatch.setenv("PYTHONPATH", str(REPO), prepend=os.pathsep)
    nb = nbformat.read(path, as_version=4)
    client = nbclient.NotebookClient(
        nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}
    )
    client.execute()  # raises CellExecutionError, naming the cell, if any cell fails
    errors = [
        out for cell in nb.cells if cell.cell_type == "code" for out in cell.outputs if out.output_type == "error"
    ]
    assert not errors
    # Plots were drawn, not silently skipped.
    images = [
        out
        for cell in nb.cells
        if cell.cell_type == "code"
        for out in cell.outputs
        if "image/png" in out.get("data", {})
    ]
    assert images, f"{path.name} drew no figure"


def test_notebook_01s_calls_give_what_the_command_line_gives(tmp_path, capsys):
    # One default (issue 28): the quickstart says "the same answers come from the command line"; its library calls
    # and the command it names are run side by side here, at its own inputs.
    import json

    from specsim.cli.main import main
    from specsim.speculation.sweep import optimal_gamma_table

    nb = nbformat.read(REPO / "notebooks" / "01-quickstart.ipynb", as_version=4)
    source = "\n".join(c.source for c in nb.cells if c.cell_type == "code")
    assert 'HARDWARE = "h200"' in source and 'DRAFT = "llama-3.2-1b"' in source and "CONTEXT = 2048" in source
    assert "optimal_gamma_table(alpha=ALPHA, batch=[1, 2, 4, 8, 16, 32, 64, 128, 256], context=CONTEXT," in source
    # The notebook's alpha, as it computes it, is the one its header's command names (it named 0.75 beside 0.79).
    from specsim.speculation.acceptance import alpha_from_acceptance_length

    assert "ALPHA = round(float(alpha_from_acceptance_length(2.9, 3)), 2)" in source
    alpha = f"{round(float(alpha_from_acceptance_length(2.9, 3)), 2):g}"
    assert f"specsim optimal-gamma --alpha {alpha} --hardware h200" in nb.cells[0].source
    config = tmp_path / "config.json"  # the notebook's example target, the shape of Llama-3.1-8B
    config.write_text(
        json.dumps(
            {
                "architectures": ["LlamaForCausalLM"],
                "hidden_size": 4096,
                "intermediate_size": 14336,
                "num_hidden_layers": 32,
                "num_attention_heads": 32,
                "num_key_value_heads": 8,
                "head_dim": 128,
                "vocab_size": 128256,
                "tie_word_embeddings": False,
                "torch_dtype": "bfloat16",
            }
        )
    )
    batches = [1, 2, 4, 8, 16, 32, 64, 128, 256]
    table = optimal_gamma_table(
        alpha=float(alpha), batch=batches, context=2048, hardware="h200", pairs=(str(config), "llama-3.2-1b")
    )
    assert (
        main(
            [
                "optimal-gamma",
                "--alpha",
                alpha,
                "--hardware",
                "h200",
                "--target",
                str(config),
                "--draft",
                "llama-3.2-1b",
                "--context",
                "2048",
                "--batch",
                ",".join(map(str, batches)),
                "--json",
            ]
        )
        == 0
    )
    rows = json.loads(capsys.readouterr().out)
    assert [r["gamma"] for r in rows] == table.gamma.tolist()
    np.testing.assert_allclose([r["speedup"] for r in rows], table.speedup, rtol=1e-12)
    assert set(table.timing) == {rows[0]["timing_source"]} and set(table.engine) == {"vllm@latest"}


def test_notebook_03s_fit_line_says_whether_a_per_layer_term_was_fitted(capsys):
    """Its fit line printed "fitted: ... overhead 2.44 ms, per layer 0.0 us" where the fit kept no per-layer term
    (summary()["per_layer_overhead_fitted"] False: tried, not 5% better on the training points), so the zero read as a
    fitted value.  Its import and fit cells, run as written: the line names the term only where the fit kept one."""
    nb = nbformat.read(REPO / "notebooks" / "03-calibration.ipynb", as_version=4)
    code = [c.source for c in nb.cells if c.cell_type == "code"]
    fit = next(source for source in code if "cpu = calibrate(" in source)
    namespace: dict = {}
    exec(code[0], namespace)  # the imports
    exec(fit, namespace)
    line = capsys.readouterr().out
    assert line.startswith("fitted: compute_eff")
    if namespace["summary"]["per_layer_overhead_fitted"]:
        assert "per layer" in line and "no per-layer term" not in line
    else:
        assert "per layer" not in line and "no per-layer term (tried, not kept" in line


def test_notebook_04s_prose_says_what_its_cells_compute():
    """Its prose said the TP-2 draft on one GPU (vLLM 0.15's option) paid most, where its cell printed 1.00x at gamma 0
    at every batch (vLLM 0.15 ran a draft model's passes without CUDA graphs), and that verification 'adds little' at
    batch 16 of Qwen3-30B-A3B, where its figure shows 1.46x a decode step.  The claims, against the same calls."""
    from specsim.describe.hardware import load_hardware
    from specsim.describe.models import get_model
    from specsim.engines import source_and_engine
    from specsim.speculation.deployment import Deployment
    from specsim.speculation.search import optimal_gamma

    nb = nbformat.read(REPO / "notebooks" / "04-your-deployment.ipynb", as_version=4)
    prose = " ".join(" ".join(c.source.split()) for c in nb.cells if c.cell_type == "markdown")
    assert "vLLM 0.15-0.16's option, and there it never pays" in prose
    assert "Every curve that speculates peaks at batch 32" in prose
    assert "At batch 16 a decode step already reads 82 of the 128 and verification still costs about 1.5 times" in prose
    assert "by batch 64 a decode step reads nearly all of them and verification costs the same" in prose

    config = REPO / "specsim" / "describe" / "catalog" / "qwen3-30b-a3b.json"  # the file the notebook copies
    target = get_model(config)
    batch = np.array([1, 2, 4, 8, 16, 32, 64, 128, 256])
    assert round(float(target.experts_touched(16))) == 82 and target.experts_touched(64) > 125
    h100 = load_hardware("h100-sxm")
    roofline, bare = source_and_engine(h100, "roofline", "none")
    ratio = Deployment(h100, target, get_model("qwen3-0.6b"), source=roofline, engine=bare).outcome(0.8, 3, batch, 1128)
    ratio = ratio.verify.total_s / ratio.target.total_s
    assert 1.4 < ratio[4] < 1.55 and abs(ratio[6] - 1) < 0.02  # batch 16 and 64
    options = {
        "bf16, 1 GPU": ({}, {}, None),
        "fp8, 1 GPU": ({"weight_dtype": "fp8"}, {}, None),
        "fp8, TP 2, draft on 1 GPU": ({"weight_dtype": "fp8", "tp": 2}, {"tp": 1}, "vllm@0.15"),
        "fp8, TP 2, draft on both": ({"weight_dtype": "fp8", "tp": 2}, {"tp": 2}, None),
    }
    assert all(f'"{label}"' in "".join(c.source for c in nb.cells) for label in options)
    for label, (t_opts, d_opts, engine) in options.items():
        dep = Deployment.build(
            "h100-sxm", str(config), "qwen3-0.6b", target_options=t_opts, draft_options=d_opts, engine=engine
        )
        best = optimal_gamma(dep, 0.8, batch, 1128)
        if label == "fp8, TP 2, draft on 1 GPU":
            assert not best.gamma.any(), label  # it never pays
        else:
            assert batch[int(np.argmax(best.speedup))] == 32, label


def test_notebook_02s_prose_says_what_its_cells_compute():
    """Its last paragraph said the measured kernels' speedup 'fades from batch 16 on instead of staying flat and then
    falling off a cliff past the ridge', and that this is why the default picks a smaller gamma at moderate batch; its
    cells print the kernels' speedup falling from 1.68x to 1.03x between batch 64 and 256 (a cliff too), and the best
    gamma the same as the roofline's up to batch 64.  The numbers the prose now quotes, against the same calls."""
    from specsim.speculation.deployment import Deployment
    from specsim.speculation.sweep import optimal_gamma_table, sweep

    nb = nbformat.read(REPO / "notebooks" / "02-why-batch-size-matters.ipynb", as_version=4)
    prose = " ".join(" ".join(c.source.split()) for c in nb.cells if c.cell_type == "markdown")
    code = "".join(c.source for c in nb.cells if c.cell_type == "code")
    assert "batches = [1, 2, 4, 8, 16, 32, 64, 128, 256]" in code and "context=400" in code
    dep = Deployment.build("h100-sxm", "llama-3.1-8b", "llama-3.2-1b", timing="roofline")
    batches = [1, 2, 4, 8, 16, 32, 64, 128, 256]
    on = {"hardware": dep.hardware, "pairs": (dep.target, dep.draft), "engine": "vllm"}
    speed, ratio, best = {}, {}, {}
    for timing in ("roofline", "hybrid"):
        table = sweep(alpha=0.8, gamma=3, batch=batches, context=400, timing=timing, **on).set_index("batch")
        speed[timing], ratio[timing] = table.speedup, table.verify_ratio
        best[timing] = optimal_gamma_table(alpha=0.8, batch=batches, context=400, timing=timing, **on)
        best[timing] = best[timing].set_index("batch").gamma
    for b, word in ((16, "at batch 16"), (32, "at 32"), (64, "at 64"), (128, "at batch 128"), (256, "at 256")):
        said = f"{speed['hybrid'][b]:.2f}x against {speed['roofline'][b]:.2f}x {word}"
        assert said in prose, said
    # "slips from batch 16 on, where the roofline holds it flat until the ridge"
    lower = speed["roofline"] - speed["hybrid"]
    assert lower.loc[:8].max() < 0.02 < lower[16]
    assert (speed["roofline"].loc[:64] > 1.83).all() and (ratio["roofline"].loc[:64] < 1.002).all()
    # The left panel: verification dearer than a decode step (1.0299 at batch 16 since the hybrid's untiled ratio,
    # fa9a86b; 1.03 held it before).
    assert (ratio["hybrid"].loc[16:64] > 1.025).all()
    assert "The best γ (the cell above) is the same on both up to batch 16 (4)" in prose
    assert "one smaller with the kernels at batch 32 (3 against 4), and the same again at 64 (3) and 128 (2)" in prose
    assert best["roofline"].loc[:64].tolist() == [4] * 6 + [3]
    assert best["hybrid"].loc[:64].tolist() == [4] * 5 + [3, 3]
    assert best["hybrid"][128] == best["roofline"][128] == 2
