"""Members of plain classes as entries (analyzers/dynamic/objects.py): the object is built from
searched constructor inputs on each call, as real distributions, kernels and metrics keep
their numerics; the reproducer builds it the same way and fails on its own; through the real
harness."""

from __future__ import annotations

from pathlib import Path

import pytest
from harness_support import run_findings, run_script, write_repo

from analyzers.dynamic.objects import ObjectCall, object_inputs
from analyzers.dynamic.signatures import EntryError

DISTRIBUTIONS = """\
import torch


class Gamma:
    \"\"\"A distribution that keeps its parameters, as torch.distributions and Pyro do.\"\"\"

    def __init__(self, concentration, rate, validate_args=None):
        self.concentration = concentration
        self.rate = rate

    def log_prob(self, value):
        return (self.concentration * torch.log(self.rate)
                + (self.concentration - 1) * value - self.rate * value)

    @property
    def mean_log_scale(self):
        return torch.log(self.concentration / self.rate)


class Categorical:
    \"\"\"Either `probs` or `logits`, as torch.distributions.Categorical takes them.\"\"\"

    def __init__(self, probs=None, logits=None):
        if (probs is None) == (logits is None):
            raise ValueError("give exactly one of probs or logits")
        if probs is not None and bool((probs < 0).any()):
            raise ValueError("probs must be non-negative")
        self.probs = probs if probs is not None else torch.softmax(logits, -1)

    def entropy(self):
        return -(self.probs * torch.log(self.probs)).sum(-1)
"""


def test_the_constructor_inputs_are_found_by_trying(tmp_path: Path, clean_modules: None) -> None:
    repo = write_repo(tmp_path / "repo", {"dists.py": DISTRIBUTIONS})
    import sys

    sys.path.insert(0, str(repo))
    try:
        import dists  # type: ignore[import-not-found]

        gamma = object_inputs(dists.Gamma, "log_prob", "torch")
        assert gamma.call.init_names == ("concentration", "rate")
        assert gamma.param_names == ["concentration", "rate", "value"]
        assert [s.shape for s in gamma.specs] == [(), (), (4, 8)]  # scalars broadcast
        prop = object_inputs(dists.Gamma, "mean_log_scale", "torch")
        assert prop.call.is_property and len(prop.specs) == 2
        # with neither optional the constructor raises; `probs` alone is tried next, and
        # normal values pass its own check
        categorical = object_inputs(dists.Categorical, "entropy", "torch")
        assert categorical.call.init_names == ("probs",)
        assert isinstance(categorical.call, ObjectCall)
        with pytest.raises(EntryError, match="has no nothing"):
            object_inputs(dists.Gamma, "nothing", "torch")
    finally:
        sys.path.remove(str(repo))


def test_members_of_plain_classes_are_confirmed_with_standalone_reproducers(
        tmp_path: Path) -> None:
    repo = write_repo(tmp_path / "repo", {"dists.py": DISTRIBUTIONS})
    run = run_findings(repo, "dists.py", ["Categorical.entropy", "Gamma.log_prob",
                                          "Gamma.mean_log_scale"],
                       finding_timeout=120, timeout=400)
    for function in ("Gamma.log_prob", "Gamma.mean_log_scale", "Categorical.entropy"):
        record = run.record(function)
        assert record["status"] == "confirmed", (function, record)
        source = record["reproducer"]
        assert "obj = " in source and "def run(" in source
        proc = run_script(repo, source)
        assert proc.returncode != 0 and "AssertionError" in proc.stderr, proc.stderr[-1500:]
