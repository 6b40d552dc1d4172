"""A function that is an op under another name: its proof on made-up inputs is held back."""

from __future__ import annotations

import pytest

from analyzers.model import AnalysisResult
from analyzers.report.markdown import render_markdown
from analyzers.static import scan_source
from analyzers.trust import comment_inline, held_back_reason, is_credible_proof

WRAPPERS = [
    # jax-md's: a custom JVP for the gradient at 0; callers pass squared distances
    "import jax\nimport jax.numpy as jnp\n\n@jax.custom_jvp\ndef safe_sqrt(x):\n"
    "    return jnp.sqrt(x)\n",
    'import torch\n\ndef log(x):\n    """The natural log."""\n    return torch.log(x)\n',
    "import torch\n\nclass Ops:\n    def log(self, p):\n        return torch.log(p)\n",
    "import torch\n\ndef safeDiv(a, b):\n    return torch.div(a, b)\n",
]
NOT_WRAPPERS = [
    # the same shape, named for what it computes: a loss whose callers pass probabilities
    "import torch\n\ndef new_loss(p):\n    return torch.log(p)\n",
    "import torch\n\ndef logits(p):\n    return torch.log(p)\n",
    # the body computes the operand: the function owns what it can be
    "import torch\n\ndef entropy(p):\n    return -(p * torch.log(p)).sum()\n",
    "import torch\n\ndef log_norm(x):\n    return torch.log(x.norm())\n",
    # a statement before the return: the function does more than the op
    "import torch\n\ndef log(x):\n    y = x * 2\n    return torch.log(y)\n",
    # a nested function or a comprehension: the function around it chose its inputs
    "import torch\n\ndef logs(params):\n    return [torch.log(p) for p in params]\n",
    "import torch\n\ndef outer(x):\n    def inner(y):\n        return torch.log(y)\n"
    "    return inner(x - 1)\n",
    # the operand is not a parameter
    "import torch\n\ndef first_log(x):\n    return torch.log(x[0])\n",
]


@pytest.mark.parametrize("source", WRAPPERS)
def test_an_op_under_another_name_is_marked(source: str) -> None:
    findings = scan_source(source, "m.py").findings
    assert findings and all(f.op_wrapper for f in findings), findings


@pytest.mark.parametrize("source", NOT_WRAPPERS)
def test_a_function_that_computes_its_operand_is_not_a_wrapper(source: str) -> None:
    findings = scan_source(source, "m.py").findings
    assert findings and not any(f.op_wrapper for f in findings), findings


def test_a_wrappers_proof_on_made_up_inputs_is_held_back_and_a_recorded_one_is_not() -> None:
    (finding,) = scan_source(WRAPPERS[0], "ops/helper.py").findings
    finding.status = "confirmed"
    finding.trigger = {"box": {"source": "synthesised"}}
    assert not is_credible_proof(finding) and not comment_inline(finding, "proven")
    assert held_back_reason(finding) == "op-wrapper"
    result = AnalysisResult(
        repo="r", base=None, head="h", config={}, findings=[finding], files_analyzed=1
    )
    text = render_markdown(result)
    assert "### ops/helper.py:6" not in text
    assert "1 op-wrapper (confirmed only on made-up inputs to a function that is the op" in text
    assert "proven only where a wrapper's callers choose the operand" in text
    # a call the repository's tests made, or an entry the user configured, is the code's own
    for source in ("harvested", "config"):
        finding.trigger = {"box": {"source": source}}
        assert is_credible_proof(finding) and comment_inline(finding, "proven")
        assert "### ops/helper.py:6" in render_markdown(result)
