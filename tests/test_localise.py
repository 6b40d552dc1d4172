"""Localisation of the first NaN/Inf on real PyTorch code: forward ops, and backward nodes
mapped back to the forward op (and the user's line) that created them.

The code under test is a small package written to a temporary repository root; a "library"
module lives outside that root, as an installed package would, so the user's line is the
one that calls into it.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import torch

from analyzers.dynamic.entries import EntryConfig, build_configured
from analyzers.dynamic.localise import localise

USER = """\
import torch
import torch.nn.functional as F
from torch import nn

import loclib


def layer_normed(x):
    h = x * 2.0
    return F.layer_norm(h, (4,), eps=0.0)  # @layer-norm


def norm_of(x):
    squares = x ** 2
    return torch.sqrt(squares.sum(-1))  # @sqrt


def through_library(x):
    y = x + 0.0
    return loclib.rms(y) * 3.0  # @library


def through_composite(x):
    y = x + 0.0
    return loclib.rms_op(y) + 1.0  # @composite


def finite_everywhere(x):
    return torch.exp(-x.abs()).sum()


class Angle(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.tensor([1.0, 0.0, 0.0, 0.0]))
        self.scale = nn.Parameter(torch.ones(()))

    def forward(self, x):
        cos = (x * self.w).sum(-1).clamp(-1.0, 1.0)
        return torch.acos(cos) + self.scale  # @acos
"""

LIBRARY = '''\
import torch
from torch.overrides import handle_torch_function, has_torch_function_unary


def rms(x):
    """A plain library helper: every op inside it is seen, on the library's own lines."""
    return torch.sqrt((x * x).mean(-1))


def rms_op(x):
    """A helper that takes part in __torch_function__ itself, as torch.nn.functional does:
    a mode sees one call, not the ops inside."""
    if has_torch_function_unary(x):
        return handle_torch_function(rms_op, (x,), x)
    return torch.sqrt((x * x).mean(-1)) * 1.0  # the sqrt node is not the output's node
'''


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    root = tmp_path_factory.mktemp("localise") / "repo"
    library = root.parent / "site"
    (root / "locpkg").mkdir(parents=True)
    library.mkdir()
    (root / "locpkg" / "__init__.py").write_text("", encoding="utf-8")
    (root / "locpkg" / "user.py").write_text(USER, encoding="utf-8")
    (library / "loclib.py").write_text(LIBRARY, encoding="utf-8")
    sys.path.insert(0, str(library))
    yield root
    for entry in (str(library), str(root.resolve())):
        while entry in sys.path:
            sys.path.remove(entry)
    for name in [m for m in sys.modules if m == "loclib" or m.startswith("locpkg")]:
        del sys.modules[name]


def line_of(marker: str) -> int:
    (line,) = [i for i, text in enumerate(USER.splitlines(), 1) if text.endswith(marker)]
    return line


def entry(repo: Path, name: str, inputs: tuple[str, ...] = ("float32[4]",)) -> Any:
    return build_configured(repo, EntryConfig(f"locpkg.user:{name}", inputs), seed=0)


def test_forward_names_the_library_function_called_on_the_users_line(repo: Path) -> None:
    """A constant row: layer_norm with eps=0 divides 0 by 0; the multiply before it is fine."""
    found = localise(entry(repo, "layer_normed"), [torch.ones(4)], str(repo))
    assert found == {
        "op": "layer_norm",
        "path": "locpkg/user.py",
        "line": line_of("@layer-norm"),
        "where": "forward",
    }


def test_forward_localisation_stays_silent_on_a_gradient_only_failure(repo: Path) -> None:
    assert localise(entry(repo, "norm_of"), [torch.zeros(4)], str(repo)) is None


def test_backward_names_sqrt_of_a_sum_of_squares_at_zero(repo: Path) -> None:
    found = localise(entry(repo, "norm_of"), [torch.zeros(4)], str(repo), where="backward")
    assert found is not None
    json.dumps(found)  # it travels in the harness's JSON record
    assert (found["op"], found["path"], found["line"]) == (
        "sqrt",
        "locpkg/user.py",
        line_of("@sqrt"),
    )
    assert found["where"] == "backward" and found["node"] == "SqrtBackward0"
    assert found["reaches_inputs"] is True and found["inputs"] == ["x"]
    assert found["reaches_parameters"] is False and found["parameters"] == []


def test_backward_at_a_finite_point_finds_nothing(repo: Path) -> None:
    """Away from zero every gradient is finite: no node may be blamed."""
    assert localise(entry(repo, "norm_of"), [torch.ones(4)], str(repo), where="backward") is None
    assert (
        localise(entry(repo, "finite_everywhere"), [torch.zeros(4)], str(repo), where="backward")
        is None
    )


def test_backward_inside_a_library_helper_names_the_users_calling_line(repo: Path) -> None:
    found = localise(entry(repo, "through_library"), [torch.zeros(4)], str(repo), where="backward")
    assert found is not None
    assert (found["op"], found["path"], found["line"], found["node"]) == (
        "sqrt",
        "locpkg/user.py",
        line_of("@library"),
        "SqrtBackward0",
    )
    assert found["reaches_inputs"] is True


def test_backward_inside_a_composite_op_is_named_by_the_composite(repo: Path) -> None:
    """The nodes rms_op makes inside are never seen by the mode; the failing one inherits
    the label of the op it belongs to."""
    found = localise(
        entry(repo, "through_composite"), [torch.zeros(4)], str(repo), where="backward"
    )
    assert found is not None
    assert (found["op"], found["path"], found["line"], found["node"]) == (
        "rms_op",
        "locpkg/user.py",
        line_of("@composite"),
        "SqrtBackward0",
    )


def test_backward_acos_at_one_reaches_inputs_and_the_parameter(repo: Path) -> None:
    """acos'(1) is -inf; times w = [1, 0, 0, 0] it is NaN for x, and times x for w. The
    scale parameter only sees the finite gradient of the sum."""
    angle = entry(repo, "Angle")
    found = localise(angle, [torch.tensor([1.0, 0.0, 0.0, 0.0])], str(repo), where="backward")
    assert found is not None
    assert (found["op"], found["line"], found["node"]) == (
        "acos",
        line_of("@acos"),
        "AcosBackward0",
    )
    assert found["reaches_inputs"] is True and found["inputs"] == ["x"]
    assert found["reaches_parameters"] is True and found["parameters"] == ["w"]
    assert angle.fn.w.grad is None, "localisation must not leave gradients on the model"


def test_backward_request_still_reports_a_forward_nan_first(repo: Path) -> None:
    """When the forward already made the NaN, that is where it first appeared."""
    found = localise(entry(repo, "layer_normed"), [torch.ones(4)], str(repo), where="backward")
    assert found is not None and found["where"] == "forward"
    assert found["op"] == "layer_norm"


def test_library_source_is_really_outside_the_repository(repo: Path) -> None:
    import loclib

    assert not Path(loclib.__file__).resolve().is_relative_to(repo.resolve())


def test_uninitialised_memory_is_never_where_a_nan_was_made(repo: Path) -> None:
    """`alpha.new_empty(shape).uniform_(...)` (pyro's stable sampler) hands back whatever bits
    the allocator had, NaN among them, before the code fills them: the op that made the NaN
    is a later one, never the allocation."""
    from analyzers.dynamic.localise import FirstNonFinite

    def new_empty(*_: Any) -> torch.Tensor:  # what the allocator may hand back
        return torch.full((2,), float("nan"))

    def reciprocal(*_: Any) -> torch.Tensor:
        return torch.full((2,), float("inf"))

    mode = FirstNonFinite(str(repo))
    mode.__torch_function__(new_empty, (), (torch.ones(2),))
    assert mode.found is None
    mode.__torch_function__(reciprocal, (), (torch.zeros(2),))
    assert mode.found is not None and mode.found["op"] == "reciprocal"


def test_a_lazy_module_that_fails_on_touch_holds_no_op(monkeypatch: pytest.MonkeyPatch) -> None:
    """TensorFlow's lazy `tf.keras` loader recurses without end once a checkout's own `keras`
    shadows the one it expects (multi-backend Keras 2.2): looking for an op's owners there
    finds none instead of failing every evaluation of the search with RecursionError."""
    import types

    from analyzers.dynamic.owners import owners

    class Lazy(types.ModuleType):
        def __getattr__(self, name: str) -> object:
            return getattr(self, name)  # as tensorflow's KerasLazyLoader does here

    monkeypatch.setitem(sys.modules, "numcheck_lazy_probe", Lazy("numcheck_lazy_probe"))
    assert list(owners("numcheck_lazy_probe.backend.log")) == []
    assert list(owners("numcheck_lazy_probe.log")) == []
