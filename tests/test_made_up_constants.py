"""A proof on a made-up call that needs a constant the code is handed (a parameter's
attribute, `force_field.par_16`) at a value numcheck chose is held back; one that needs the
constants only at 0, or whose values came from the repository's own call, is commented."""

from __future__ import annotations

from typing import Any

from analyzers.model import AnalysisResult
from analyzers.report.markdown import render_markdown
from analyzers.static import scan_source
from analyzers.trust import comment_inline, held_back_reason, rests_on_constants

LONE_PAIRS = (
    "import jax.numpy as jnp\n\n"
    "def lone_pair_energy(excess, force_field):\n"
    "    return jnp.exp(-force_field.par_16 * excess * excess)\n"
)


def _confirmed(decay: Any, box: str = "synthesised") -> Any:
    (finding,) = scan_source(LONE_PAIRS, "jax_md/energy.py").findings
    finding.status = "confirmed"
    finding.trigger = {
        "evaluations": 3,
        "inputs": [
            {"shape": [4], "dtype": "float32", "values": [2.0, 0.0, 0.0, 0.0]},
            {"shape": [], "dtype": "float32", **decay},
        ],
        "box": {
            "source": box,
            "target": "jax_md.energy:lone_pair_energy",
            "inputs": [
                {"dtype": "float32", "shape": [4], "lo": -100, "hi": 100, "source": "default"},
                {
                    "dtype": "float32",
                    "shape": [],
                    "lo": -100,
                    "hi": 100,
                    "source": "default",
                    "attribute": "force_field.par_16",
                },
            ],
        },
    }
    return finding


def test_a_decay_constant_given_the_wrong_sign_is_held_back() -> None:
    finding = _confirmed({"values": -59.2})
    assert rests_on_constants(finding) and not comment_inline(finding, "proven")
    assert held_back_reason(finding) == "made-up-constant"
    text = render_markdown(
        AnalysisResult(repo="r", base=None, head="h", config={}, findings=[finding])
    )
    assert "### jax_md/energy.py:4" not in text
    assert "1 made-up-constant (confirmed only on a made-up call that sets constants" in text
    assert "proven only with constants the code is handed set by numcheck" in text
    # a large constant's summary is its range
    assert rests_on_constants(_confirmed({"min": 0.0, "max": 3.0}))


def test_constants_left_at_zero_or_from_a_recorded_call_keep_the_comment() -> None:
    at_zero = _confirmed({"values": 0.0})
    assert not rests_on_constants(at_zero) and comment_inline(at_zero, "proven")
    for source in ("harvested", "config"):
        recorded = _confirmed({"values": -59.2}, box=source)
        assert not rests_on_constants(recorded) and comment_inline(recorded, "proven")
    # an input that stands for no attribute may take any value
    data_only = _confirmed({"values": -59.2})
    del data_only.trigger["box"]["inputs"][1]["attribute"]
    assert comment_inline(data_only, "proven")


ADAM_REFERENCE = (
    "import numpy as np\n\n"
    "def adam_update_numpy(param, g_t, t, m, v, lr=0.001, beta1=0.9, beta2=0.999):\n"
    "    lr_t = lr * np.sqrt(1 - beta2**(t + 1)) / (1 - beta1**(t + 1))\n"
    "    return param - lr_t * g_t\n"
)


def test_a_proof_on_a_made_up_call_to_a_test_files_function_is_held_back() -> None:
    """Keras's `adam_test.py` keeps a NumPy reference of Adam's step; "proved" at beta1 = 1
    on a made-up call, it was noise: the test's inputs are its own choice. The same proof
    from the tests' own call, or in the code under review, is commented."""
    (finding,) = [
        f
        for f in scan_source(ADAM_REFERENCE, "keras/optimizer_v2/adam_test.py").findings
        if f.op == "div"
    ]
    finding.status = "confirmed"
    finding.trigger = {"evaluations": 1, "inputs": [], "box": {"source": "synthesised"}}
    assert not comment_inline(finding, "proven")
    assert held_back_reason(finding) == "test-made-up"
    text = render_markdown(
        AnalysisResult(repo="r", base=None, head="h", config={}, findings=[finding])
    )
    assert "1 test-made-up (confirmed only on a made-up call to a function in a test file" in text
    assert "proven only on a test file's function called with made-up inputs" in text
    finding.trigger["box"]["source"] = "recorded"
    assert comment_inline(finding, "proven")
    (in_code,) = [
        f
        for f in scan_source(ADAM_REFERENCE, "keras/optimizer_v2/adam_ref.py").findings
        if f.op == "div"
    ]
    in_code.status, in_code.trigger = (
        "confirmed",
        finding.trigger | {"box": {"source": "synthesised"}},
    )
    assert comment_inline(in_code, "proven")
