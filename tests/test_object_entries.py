"""Members of plain classes as entries (analyzers/dynamic/objects.py): the object is built from
searched constructor inputs on each call, as real distributions, kernels and metrics keep
their numerics; the reproducer builds it the same way and fails on its own; through the real
harness."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch
from harness_support import confirmed_reproducer, run_findings, run_script, write_repo

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


def test_members_of_plain_classes_are_confirmed_with_standalone_reproducers(tmp_path: Path) -> None:
    repo = write_repo(tmp_path / "repo", {"dists.py": DISTRIBUTIONS})
    run = run_findings(
        repo,
        "dists.py",
        ["Categorical.entropy", "Gamma.log_prob", "Gamma.mean_log_scale"],
        finding_timeout=120,
        timeout=400,
    )
    for function in ("Gamma.log_prob", "Gamma.mean_log_scale", "Categorical.entropy"):
        record = run.record(function)
        assert record["status"] == "confirmed", (function, record)
        source = record["reproducer"]
        assert "obj = " in source and "def run(" in source
        proc = run_script(repo, source)
        assert proc.returncode != 0 and "AssertionError" in proc.stderr, proc.stderr[-1500:]


PROBS_OR_LOGITS = '''import torch
import torch.nn.functional as F


def get_probs_and_logits(ps=None, logits=None, is_multidimensional=True):
    """Probabilities and logits from either one (torch.distributions' convention)."""
    assert (ps is None) != (logits is None)
    if ps is None:
        ps = F.softmax(logits, -1)
    else:
        logits = torch.log(ps)
    return ps, logits
'''


def test_a_parameter_that_defaults_to_none_is_searched_when_the_op_reads_it(tmp_path: Path) -> None:
    """`ps=None`: the `log(ps)` branch runs only when a caller passes `ps`, so the
    synthesised call passes it, and the reproducer calls `get_probs_and_logits(ps)` with the
    zeros that make log -inf (the minimiser's base), not a box corner."""
    repo = write_repo(tmp_path, {"dist/__init__.py": "", "dist/util.py": PROBS_OR_LOGITS})
    run = run_findings(
        repo,
        "dist/util.py",
        ["get_probs_and_logits"],
        finding_timeout=60,
        timeout=200,
        search_seconds=10.0,
    )
    source = confirmed_reproducer(repo, run)
    assert "out = get_probs_and_logits(ps)" in source
    assert "ps = torch.full((4, 8), 0.0" in source


def test_only_a_leading_none_default_can_be_passed_by_position() -> None:
    from analyzers.dynamic.signatures import operand_names, signature_inputs

    def scaled(x, weight=None, scale=None):  # type: ignore[no-untyped-def]
        return x

    def either(ps=None, logits=None):  # type: ignore[no-untyped-def]
        return ps

    # `scale` sits behind the unsearched `weight`: passed by position it would land there
    assert len(signature_inputs(scaled, None, operand_names=operand_names("scale")).specs) == 1
    found = signature_inputs(either, None, operand_names=operand_names("torch.log(ps)"))
    assert len(found.specs) == 1 and found.constants == {"logits": None}
    with pytest.raises(EntryError, match="no tensor parameters"):  # `logits` follows `ps`
        signature_inputs(either, None, operand_names=operand_names("logits.exp()"))


def test_an_epsilon_parameter_is_a_positive_guard_not_a_searched_tensor() -> None:
    """flax's `_merge_param(self, direction, scale, eps)` divides by `eps + norm`: searched as
    data, eps was set to 0 and "proved" a division every caller guards."""
    from analyzers.dynamic.signatures import constructor_args, signature_inputs
    from analyzers.epsilon import GUARD_VALUE

    def merge_param(direction, scale, eps):  # type: ignore[no-untyped-def]
        return scale / (eps + direction)

    def total(values, num_steps):  # type: ignore[no-untyped-def]
        return values / num_steps  # `steps` holds the letters e-p-s: still data

    found = signature_inputs(merge_param, None)
    specs, constants, chosen = found.specs, found.constants, found.chosen
    assert len(specs) == 2 and chosen == {"eps": GUARD_VALUE} == constants
    assert len(signature_inputs(total, None).specs) == 2

    class Norm:
        def __init__(self, dim, layer_eps):  # type: ignore[no-untyped-def]
            self.dim, self.eps = dim, layer_eps

    assert constructor_args(Norm) == {"dim": 8, "layer_eps": GUARD_VALUE}


def test_a_seed_parameter_is_a_seed_not_a_searched_tensor() -> None:
    """TFP's `_sample_multinomial_as_iterated_binomial(..., probs, num_trials, dtype, seed)`:
    a float tensor for the seed broke its sampler (a bitwise XOR) before the division ran."""
    from analyzers.dynamic.signatures import SEED_VALUE, constructor_args, signature_inputs

    def draw(probs, num_trials, seed):  # type: ignore[no-untyped-def]
        return probs / num_trials

    def seeded(probs, seedling):  # type: ignore[no-untyped-def]
        return probs / seedling  # a name that merely starts with "seed" is data

    found = signature_inputs(draw, None)
    specs, constants, chosen = found.specs, found.constants, found.chosen
    assert len(specs) == 2 and chosen == {"seed": SEED_VALUE} == constants
    assert isinstance(SEED_VALUE, int)
    assert len(signature_inputs(seeded, None).specs) == 2

    class Sampler:
        def __init__(self, size, sample_seed):  # type: ignore[no-untyped-def]
            self.size, self.seed = size, sample_seed

    assert constructor_args(Sampler) == {"size": 8, "sample_seed": SEED_VALUE}


def test_a_dtype_parameter_is_float32_as_the_code_s_framework_spells_it() -> None:
    """`def energy(dr, params, dtype)`: searched as a float tensor, a dtype parameter fails at
    the code's first cast, before the op. torch code gets a torch.dtype; NumPy, JAX and
    TensorFlow code the name "float32", which all three take."""
    import numpy as np

    from analyzers.dynamic.signatures import constructor_args, signature_inputs

    def log_of(x, dtype):  # type: ignore[no-untyped-def]
        return torch.log(x.to(dtype))

    def np_log_of(x, compute_dtype):  # type: ignore[no-untyped-def]
        return np.log(x.astype(compute_dtype))

    found = signature_inputs(log_of, None)
    assert len(found.specs) == 1 and found.chosen == {"dtype": torch.float32}
    x = torch.tensor([0.0, 1.0], dtype=torch.float64)
    assert log_of(x, **found.constants).dtype == torch.float32
    found = signature_inputs(np_log_of, None, framework="numpy")
    assert len(found.specs) == 1 and found.chosen == {"compute_dtype": "float32"}
    assert np_log_of(np.ones(2), **found.constants).dtype == np.float32
    assert len(signature_inputs(lambda x, dtypes: x, None).specs) == 2  # only the name itself

    class Cast:
        def __init__(self, size, dtype):  # type: ignore[no-untyped-def]
            self.size, self.dtype = size, dtype

    assert constructor_args(Cast, framework="jax") == {"size": 8, "dtype": "float32"}


NAMED = """\
import torch


def kl_with_log_targets(log_predictions, log_targets):
    return (torch.exp(log_targets) * (log_targets - log_predictions)).sum(-1)


def entropy(probs):
    return -(probs * torch.log(probs)).sum(-1)


def matthews(confmat, weights):
    return torch.sqrt(confmat.sum(0) - confmat.min(0).values) / weights
"""


def test_a_parameter_named_as_a_log_probability_a_probability_or_a_count_keeps_its_side_of_0(
    tmp_path: Path, clean_modules: None
) -> None:
    """optax's `exp(log_targets)` was "proved" with a log-probability of 95: a synthesised
    call now draws a log-probability at most 0 (no overflow left to find), while a
    probability of exactly 0 still breaks `probs * log(probs)`."""
    from analyzers.dynamic.entries import synthesise
    from analyzers.dynamic.search import Budget, Searcher
    from analyzers.dynamic.specs import DEFAULT_HI, DEFAULT_LO

    repo = write_repo(tmp_path / "repo", {"named.py": NAMED})
    kl = synthesise(repo, "named.py", "kl_with_log_targets", 0)
    assert [(s.lo, s.hi) for s in kl.specs] == [(DEFAULT_LO, DEFAULT_HI), (DEFAULT_LO, 0.0)]
    where = str(repo / "named.py")
    budget = Budget(seconds=2.0)
    assert not Searcher(kl, where, frozenset({5}), "exp", budget=budget).run().triggered
    found = synthesise(repo, "named.py", "entropy", 0)
    assert [(s.lo, s.hi) for s in found.specs] == [(0.0, 1.0)]
    assert Searcher(found, where, frozenset({9}), "log", budget=budget).run().triggered
    counts = synthesise(repo, "named.py", "matthews", 0)
    assert [(s.lo, s.hi) for s in counts.specs] == [(0.0, DEFAULT_HI), (DEFAULT_LO, DEFAULT_HI)]


def test_a_declared_range_bounds_the_search_with_its_open_ends_kept_open() -> None:
    """`arg_constraints` as torch.distributions, Pyro and NumPyro declare them: `positive`
    excludes 0 itself, so its box starts at the smallest normal float32."""
    from torch.distributions import constraints

    from analyzers.dynamic.objects import declared_bounds

    tiny = float(torch.finfo(torch.float32).tiny)
    assert declared_bounds(constraints.positive) == (tiny, math.inf)
    assert declared_bounds(constraints.nonnegative) == (0.0, math.inf)
    assert declared_bounds(constraints.unit_interval) == (0.0, 1.0)
    lo, hi = declared_bounds(constraints.half_open_interval(0.0, 1.0)) or (0, 0)
    assert lo == 0.0 and 0.99999 < hi < 1.0
    lo, _ = declared_bounds(constraints.greater_than(2.0)) or (0, 0)
    assert 2.0 < lo < 2.001
    assert declared_bounds(constraints.real) is None
    assert declared_bounds(constraints.simplex) is None
    # bounds made of the object's own parameters say nothing about one input
    assert declared_bounds(constraints.interval(torch.zeros(3), torch.ones(3))) is None


RANGED_BASE = """\
from torch.distributions import constraints


class Exponential:
    \"\"\"Declares its ranges but checks nothing, as NumPyro does unless asked to.\"\"\"

    arg_constraints = {"rate": constraints.positive, "loc": constraints.real}

    def __init__(self, rate, loc):
        self.rate, self.loc = rate, loc
"""

RANGED = """\
import torch

from ranged_base import Exponential


class Shifted(Exponential):
    def log_rate(self):
        return torch.log(self.rate)

    def log_loc(self):
        return torch.log(self.loc)
"""


def test_a_declared_range_keeps_the_search_off_values_the_class_excludes(
    tmp_path: Path, clean_modules: None
) -> None:
    """`log(rate)` with `rate` declared positive (by a base class in another module, which
    the static pass does not read) is finite, with its gradient, at every float32 the
    constraint admits: searching the whole box "proved" it at rate = 0 or below. `log(loc)`
    beside it, with `loc` declared real, is still confirmed."""
    repo = write_repo(tmp_path / "repo", {"ranged_base.py": RANGED_BASE, "ranged.py": RANGED})
    import sys

    sys.path.insert(0, str(repo))
    try:
        import ranged  # type: ignore[import-not-found]

        found = object_inputs(ranged.Shifted, "log_rate", "torch")
        rate, loc = found.specs
        assert rate.lo == float(torch.finfo(torch.float32).tiny) and rate.hi == 100.0
        assert loc.lo == -100.0
    finally:
        sys.path.remove(str(repo))
        for name in ("ranged", "ranged_base"):
            sys.modules.pop(name, None)
    run = run_findings(
        repo, "ranged.py", ["Shifted.log_loc", "Shifted.log_rate"], finding_timeout=120, timeout=300
    )
    assert run.record("Shifted.log_loc")["status"] == "confirmed"
    assert run.record("Shifted.log_rate")["status"] == "not-triggered"


LOG_UNIFORM = """\
import torch
from torch.distributions import constraints


class LogUniform:
    \"\"\"NumPyro's: each bound declared positive, nothing checked between them.\"\"\"

    arg_constraints = {"low": constraints.positive, "high": constraints.positive}

    def __init__(self, low, high):
        self.low, self.high = low, high
        self.support = constraints.interval(low, high)

    def entropy(self):
        return torch.log(torch.log(self.high) - torch.log(self.low)).sum()

    def inverse_exp(self):
        return torch.exp(1.0 / self.low).sum()
"""


def test_a_distribution_over_an_empty_interval_is_not_a_proof(
    tmp_path: Path, clean_modules: None
) -> None:
    """`log(log(high) - log(low))` is NaN only for low >= high, where the support
    interval(low, high) holds nothing: every such draw is refused like one the class's own
    checks refuse. `exp(1 / low)` beside it, for a small positive low, still fails."""
    from analyzers.dynamic.objects import refuse_empty_support

    repo = write_repo(tmp_path / "repo", {"loguniform.py": LOG_UNIFORM})
    import sys

    sys.path.insert(0, str(repo))
    try:
        import loguniform  # type: ignore[import-not-found]

        one, two = torch.ones(3), 2 * torch.ones(3)
        refuse_empty_support(loguniform.LogUniform(one, two))
        for low, high in ((two, one), (one, one)):
            with pytest.raises(ValueError, match="support interval"):
                refuse_empty_support(loguniform.LogUniform(low, high))
    finally:
        sys.path.remove(str(repo))
        sys.modules.pop("loguniform", None)
    run = run_findings(
        repo,
        "loguniform.py",
        ["LogUniform.entropy", "LogUniform.inverse_exp"],
        finding_timeout=120,
        timeout=300,
    )
    assert run.record("LogUniform.entropy")["status"] == "not-triggered"
    assert run.record("LogUniform.inverse_exp")["status"] == "confirmed"


OPTIMIZERS = """\
import torch


class WeightNorm:
    \"\"\"flax's WeightNorm: built around another optimizer numcheck cannot make up.\"\"\"

    def __init__(self, wrapped_optimizer, eps=1e-8):
        self.hyper_params = (wrapped_optimizer.hyper_params, eps)

    def split_param(self, param):
        scale = torch.sqrt(torch.square(param).sum(0, keepdim=True))
        return param / scale, scale
"""


def test_a_method_that_never_reads_self_is_called_without_the_constructor(tmp_path: Path) -> None:
    """`split_param` never reads `self`: the object is made without its constructor (which
    needs another optimizer), in the search and in the reproducer, which fails on its own."""
    repo = write_repo(tmp_path / "repo", {"optim.py": OPTIMIZERS})
    import sys

    sys.path.insert(0, str(repo))
    try:
        import optim  # type: ignore[import-not-found]

        found = object_inputs(optim.WeightNorm, "split_param", "torch")
        assert found.call.bare and found.call.init_names == ()
        assert found.param_names == ["param"]
    finally:
        sys.path.remove(str(repo))
        sys.modules.pop("optim", None)
    run = run_findings(
        repo, "optim.py", ["WeightNorm.split_param"] * 2, finding_timeout=120, timeout=300
    )
    records = [r for r in run.result.records if r.get("stage") is None]
    confirmed = [r for r in records if r["status"] == "confirmed"]
    assert confirmed, records
    for record in confirmed:
        assert "obj = WeightNorm.__new__(WeightNorm)" in record["reproducer"]
        check = run_script(repo, record["reproducer"])
        assert check.returncode != 0 and "AssertionError" in check.stderr, check.stderr[-2000:]


WRAPPED = """\
import torch


def validate_sample(log_prob_fn):
    def wrapper(self, *args, **kwargs):  # no functools.wraps, as numpyro's
        return log_prob_fn(self, *args, **kwargs)

    return wrapper


class Normal:
    def __init__(self, loc=0., scale=1., validate_args=None):
        self.loc, self.scale = torch.as_tensor(loc), torch.as_tensor(scale)

    def cdf(self, value):
        return 0.5 * (1 + torch.erf((value - self.loc) / (self.scale * 2 ** 0.5)))


class Truncated:
    supported_types = (Normal,)

    def __init__(self, base_dist, low=0., high=1.):
        assert isinstance(base_dist, self.supported_types)
        self.base_dist, self.low, self.high = base_dist, low, high

    @validate_sample
    def log_prob(self, value):
        mass = self.base_dist.cdf(torch.as_tensor(self.high)) \\
            - self.base_dist.cdf(torch.as_tensor(self.low))
        return -torch.log(mass) + 0 * value
"""


def test_an_argument_checked_with_isinstance_is_built_from_searched_numbers(tmp_path: Path) -> None:
    """numpyro's TwoSidedTruncatedDistribution: `assert isinstance(base_dist,
    self.supported_types)`, then `@validate_sample` hides `log_prob(value)` behind
    `wrapper(self, *args, **kwargs)`. The base distribution is built from one of the listed
    classes with its float defaults searched, `value` is read off the wrapped function, and
    the reproducer builds the same and fails on its own."""
    repo = write_repo(tmp_path / "repo", {"trunc.py": WRAPPED})
    import sys

    sys.path.insert(0, str(repo))
    try:
        import trunc  # type: ignore[import-not-found]

        found = object_inputs(trunc.Truncated, "log_prob", "torch")
        (part,) = found.call.parts
        assert part.owner is trunc.Normal and part.init_names == ("loc", "scale")
        assert found.param_names == ["base_dist_loc", "base_dist_scale", "value"]
    finally:
        sys.path.remove(str(repo))
        sys.modules.pop("trunc", None)
    run = run_findings(repo, "trunc.py", ["Truncated.log_prob"], finding_timeout=120, timeout=300)
    record = run.record("Truncated.log_prob")
    assert record["status"] == "confirmed", record
    source = record["reproducer"]
    assert "base_dist = Normal(loc=base_dist_loc, scale=base_dist_scale)" in source
    check = run_script(repo, source)
    assert check.returncode != 0 and "AssertionError" in check.stderr, check.stderr[-2000:]


def test_a_count_the_docstring_types_as_an_integer_is_passed_not_searched() -> None:
    """TensorFlow Probability's `num_samples: Singleton integer Tensor`: searched as a float
    tensor it broke `tf.stack` before the division the PR added could run."""
    from analyzers.dynamic.signatures import DEFAULT_FEATURES, signature_inputs
    from analyzers.dynamic.usage import parameter_uses

    def draw(probs, num_trials, num_classes):  # type: ignore[no-untyped-def]
        """Draws.

        Args:
          probs: Floating Tensor of probabilities.
          num_trials: Tensor of trial counts, cast to the probabilities' float dtype.
          num_classes: Singleton integer Tensor: number of classes.
        """
        return probs / num_trials

    found = signature_inputs(draw, None, uses=parameter_uses(draw))
    specs, constants, chosen = found.specs, found.constants, found.chosen
    assert len(specs) == 2 and chosen == {"num_classes": DEFAULT_FEATURES} == constants
    # without the docstring's word, all three are searched
    assert len(signature_inputs(draw, None).specs) == 3


TFP_SAMPLER = '''import tensorflow as tf


def sample_iterated(num_samples, num_classes, probs):
    """Draws one binomial per class, as TensorFlow Probability's sampler does.

    Args:
      num_samples: Singleton integer Tensor: number of samples to draw.
      num_classes: Singleton integer Tensor: number of classes.
      probs: Floating Tensor with last dimension `num_classes`.
    """
    shape = tf.stack([num_samples, tf.shape(probs)[0]])
    consumed = tf.cumsum(probs, axis=-1, exclusive=True)
    return tf.zeros(shape)[..., None] + probs / (1.0 - consumed)
'''


def test_leading_counts_go_by_position_and_the_division_is_reached(
    tmp_path: Path, clean_modules: None
) -> None:
    """Counts before the searched tensor are passed by position, as sizes are; as float
    tensors, `tf.stack` refused them (shapes must match) before the division ran."""
    from analyzers.dynamic.entries import synthesise

    repo = write_repo(tmp_path / "repo", {"tfp_sampler.py": TFP_SAMPLER})
    entry = synthesise(repo, "tfp_sampler.py", "sample_iterated", 0)
    assert entry.template == [8, 8, None] and len(entry.specs) == 1
    assert entry.param_names == ["probs"]
    run = run_findings(
        repo, "tfp_sampler.py", ["sample_iterated"], finding_timeout=120, timeout=300
    )
    assert run.record("sample_iterated")["status"] == "confirmed"


GRIDS = """\
from typing import List, Tuple

import torch


def spread(xs: List[torch.Tensor], y: torch.Tensor) -> torch.Tensor:
    assert isinstance(xs, list) and len(xs) == 2
    return y / (xs[1] - xs[0])


class Grid:
    def scaled(self, grid: Tuple[torch.Tensor, ...], x: torch.Tensor) -> torch.Tensor:
        assert isinstance(grid, tuple)
        return self.shift(x) / (grid[1] - grid[0])

    def shift(self, x):
        return x + 1
"""


def test_annotations_of_tensor_sequences_are_lists_of_searched_tensors() -> None:
    from analyzers.dynamic.lists import SearchedList, tensor_list

    for text in ("List[Tensor]", "list[torch.Tensor]", "collections.abc.Sequence[Tensor]"):
        assert tensor_list(text) == SearchedList(2), text
    assert tensor_list("Tuple[torch.Tensor, ...]") == SearchedList(2, is_tuple=True)
    assert tensor_list("Tuple[Tensor, Tensor, Tensor]") == SearchedList(3, is_tuple=True)
    for text in ("Tensor", "List[int]", "Optional[Tensor]", "Dict[str, Tensor]"):
        assert tensor_list(text) is None, text


def test_a_list_argument_is_searched_element_by_element_and_spelled_as_a_list(
    tmp_path: Path, clean_modules: None
) -> None:
    """`xs: List[Tensor]` was one (4, 8) tensor, which the code's `isinstance(xs, list)`
    refuses: each element is a searched input now, the call gathers them, and the
    reproducer spells the list and fails where the elements are equal."""
    from analyzers.dynamic.entries import synthesise
    from analyzers.dynamic.lists import SearchedList
    from analyzers.dynamic.reproducer import render
    from analyzers.dynamic.writer import Target

    repo = write_repo(tmp_path / "repo", {"grids.py": GRIDS})
    entry = synthesise(repo, "grids.py", "spread", 0)
    assert entry.template == [SearchedList(2), None]
    assert entry.param_names == ["xs_0", "xs_1", "y"] and len(entry.specs) == 3
    equal = [torch.ones(4, 8), torch.ones(4, 8), torch.ones(4, 8)]
    assert not bool(torch.isfinite(entry.call(equal)).all())
    source = render(entry, equal, Target("grids.py", 8, "div", "spread(xs, y)", "forward"), 0)
    assert "out = spread([xs_0, xs_1], y)" in source
    check = run_script(repo, source)
    assert check.returncode != 0 and "AssertionError" in check.stderr, check.stderr[-2000:]
    # a member of a plain class: the object call gathers the tuple the annotation asks for
    method = synthesise(repo, "grids.py", "Grid.scaled", 0)
    assert isinstance(method.fn, ObjectCall)
    assert method.fn.slots == (SearchedList(2, is_tuple=True), None)
    assert method.param_names == ["grid_0", "grid_1", "x"]
    source = render(method, equal, Target("grids.py", 14, "div", "scaled", "forward"), 0)
    assert "return obj.scaled((grid_0, grid_1), x, **kwargs)" in source
    check = run_script(repo, source)
    assert check.returncode != 0 and "AssertionError" in check.stderr, check.stderr[-2000:]


SCALERS = """\
from typing import List, Union

import torch
from torch import nn


def resolve(aggr: str = "sum"):
    return {"sum": torch.sum, "mean": torch.mean}[aggr]


class Scaled(nn.Module):
    \"\"\"PyG's DegreeScalerAggregation: a histogram the constructor averages, a scaler
    chosen by name, an aggregation by name.\"\"\"

    def __init__(self, aggr: Union[str, nn.Module], scaler: Union[str, List[str]],
                 hist: torch.Tensor):
        super().__init__()
        self.aggr = resolve(aggr)
        self.scaler = [scaler] if isinstance(scaler, str) else scaler
        self.proj = nn.Linear(8, 8)
        self.register_buffer("avg", (hist * torch.arange(hist.numel())).sum().reshape(1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.proj(x)
        for scaler in self.scaler:
            if scaler == "identity":
                out = out
            elif scaler == "inverse":
                out = out / torch.log(self.avg)
            else:
                raise ValueError(scaler)
        return out
"""


def test_a_module_whose_constructor_needs_a_tensor_is_built_from_searched_values(
    tmp_path: Path, clean_modules: None
) -> None:
    """`Scaled(aggr, scaler, hist)`: `hist` is a searched constructor input, as a plain
    class's are; `scaler` is the value the forward compares it with on the way to the line;
    `aggr` the default the package gives a parameter of that name elsewhere. The module is
    built under the seed on every call, and the reproducer does the same and fails alone."""
    from analyzers.dynamic.entries import synthesise

    repo = write_repo(tmp_path / "repo", {"scalers.py": SCALERS})
    entry = synthesise(repo, "scalers.py", "Scaled.forward", 0, line=29)
    assert isinstance(entry.fn, ObjectCall)
    assert entry.fn.init_names == ("hist",) and entry.fn.seed == 0
    assert entry.fn.init == {"scaler": "inverse", "aggr": "sum"}
    inputs = [torch.ones(8), torch.ones(4, 8)]
    first, again = entry.call(inputs), entry.call(inputs)
    assert torch.equal(first, again)  # the same weights on every construction
    run = run_findings(repo, "scalers.py", ["Scaled.forward"] * 2, finding_timeout=120, timeout=300)
    records = [r for r in run.result.records if r.get("stage") is None]
    confirmed = [r for r in records if r["status"] == "confirmed"]
    assert confirmed, records  # log(avg) is -inf at avg = 0, a histogram of zeros
    for record in confirmed:
        source = record["reproducer"]
        assert "torch.manual_seed(0)  # the same weights each time" in source
        assert "scaler='inverse'" in source and "aggr='sum'" in source
        check = run_script(repo, source)
        assert check.returncode != 0 and "AssertionError" in check.stderr, check.stderr[-2000:]
