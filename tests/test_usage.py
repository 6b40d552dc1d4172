"""usage.py: what a function's body does with its parameters, read without importing torch."""

from __future__ import annotations

from typing import Any

from analyzers.dynamic.usage import allowed_values, parameter_uses, reads_self


def _sizes(shape: Any, alpha: Any) -> Any:
    return alpha.new_empty(shape), alpha.new_zeros(shape + (1,))


def _indexed(x: Any, edge_index: Any, mask: Any, beta: Any) -> Any:
    row, col = edge_index
    out = x.new_zeros(x.shape).scatter_add_(0, row, x[col])
    return out[mask] * beta


def _gathered(x: Any, idx: Any, n: Any, weights: Any) -> Any:
    return x.index_select(0, idx)[:n], idx.bincount(weights)  # bincount's argument: floats


def _checked(nu: Any, mode: Any, scale: Any) -> Any:
    if nu not in [0.5, 1.5]:
        raise ValueError(nu)
    assert mode in ("mean", "sum")
    if scale == 2:
        return nu
    return mode


def test_a_parameter_passed_where_a_size_goes_is_a_size() -> None:
    uses = parameter_uses(_sizes)
    assert uses.sizes == {"shape"} and uses.indices == set()


def test_indices_are_subscripts_and_gather_scatter_arguments_and_unpacking_counts_rows() -> None:
    uses = parameter_uses(_indexed)
    assert uses.indices == {"edge_index", "mask"}  # `x[col]`, scatter's `row`, `out[mask]`
    assert uses.rows == {"edge_index": 2}
    assert "beta" not in uses.indices and "x" not in uses.indices


def test_a_slice_bound_is_not_an_index() -> None:
    uses = parameter_uses(_gathered)
    assert uses.indices == {"idx"}


def test_allowed_values_are_the_first_constant_each_check_allows() -> None:
    assert allowed_values(_checked) == {"nu": 0.5, "mode": "mean", "scale": 2}


def test_unreadable_source_says_nothing() -> None:
    assert parameter_uses(len).indices == set() and allowed_values(len) == {}


class _Optimizer:
    def split(self, param):
        return param / (param * param).sum()

    def scaled(self, param):
        return param * self.scale

    def inherited(self, param):
        return super().split(param)

    def renamed(this, param):  # noqa: N805 - the first parameter, whatever its name
        return this.scale * param


def test_a_method_that_never_reads_self_is_told_apart() -> None:
    assert not reads_self(_Optimizer.split)
    assert reads_self(_Optimizer.scaled)
    assert reads_self(_Optimizer.inherited)  # zero-argument super() reads it too
    assert reads_self(_Optimizer.renamed)
    assert reads_self(len)  # no source: assume it does


def _wrapped(base_dist, kernel, count):
    assert isinstance(base_dist, (_Optimizer, int))
    if not isinstance(kernel, _Optimizer):
        raise TypeError("a kernel")
    if isinstance(count, int):  # a branch, not a refusal
        return count
    return base_dist


def test_isinstance_refusals_name_the_class_a_parameter_must_be() -> None:
    import ast

    from analyzers.dynamic.usage import isinstance_checks

    checks = {name: ast.unparse(e) for name, e in isinstance_checks(_wrapped).items()}
    assert checks == {"base_dist": "(_Optimizer, int)", "kernel": "_Optimizer"}


def _iterated_binomial(num_samples: Any, num_classes: Any, probs: Any, num_trials: Any) -> Any:
    """Draws a multinomial, one binomial per class (TensorFlow Probability's docstring).

    Args:
      num_samples: Singleton integer Tensor: number of multinomial samples to
        draw.
      num_classes: Singleton integer Tensor: number of classes.
      probs: Floating Tensor with last dimension `num_classes`, of normalized
        probabilities per class.
      num_trials: Tensor of number of categorical trials each multinomial consists
        of.  num_trials[..., tf.newaxis] must broadcast with an integer tensor.

    Returns:
      counts: int32 Tensor of shape [num_samples, num_classes].
    """
    return probs / num_trials


def _numpy_documented(x: Any, k: Any, scale: Any, bins: Any, labels: Any, ids: Any) -> Any:
    """Scales x (NumPy's docstring style).

    Parameters
    ----------
    x : array_like
        The values.
    k : int
        How many.
    scale : float or int
        A scale.
    bins : int (default 10)
    labels : int array
        Class labels: many integers, searched as data.
    ids : int64 tensor of shape (n,)

    Returns
    -------
    out : int
    """
    return x * scale / k


def test_a_parameter_the_docstring_types_as_an_integer_is_a_count() -> None:
    """Only the item's type and first sentence count: `num_trials` mentions an integer
    tensor after its first sentence, and `probs` is floating; an integer array or a tensor
    of a shape holds many values, which are data."""
    assert parameter_uses(_iterated_binomial).integers == {"num_samples", "num_classes"}
    assert parameter_uses(_numpy_documented).integers == {"k", "bins"}  # not `float or int`
    assert parameter_uses(_sizes).integers == frozenset()  # no docstring
    assert parameter_uses(test_unreadable_source_says_nothing).integers == frozenset()


def _force_field_term(species, triplets, pair_mask, ff, bo):
    center = triplets[:, 0]
    kept = pair_mask & (bo > ff.cutoff)
    return ff.th0[species[center], species[center], 0] * bo[ff.pick] * kept, helper(ff)


def _not_namespaces(a, b, c, d, e):
    return a.shape, b.sum(), c.inner.value, d + 1, e.x, e[0]


def helper(ff: Any) -> Any:
    return ff


def test_a_parameter_read_only_by_attribute_is_a_namespace_with_each_attribute_s_rank() -> None:
    uses = parameter_uses(_force_field_term)
    fields = uses.namespaces["ff"]
    assert list(fields) == ["cutoff", "th0", "pick"]  # first-read order
    assert (fields["th0"].rank, fields["th0"].index) == (3, False)
    assert (fields["cutoff"].rank, fields["pick"].index) == (0, True)
    assert set(uses.namespaces) == {"ff"}  # passed on whole (`helper(ff)`) is still one


def _pair_term(species, ff):
    return ff.scale * _reads_a_table(species, ff=ff) + _reads_a_pick(species, ff) + _sums(ff)


def _reads_a_table(species, ff):
    return ff.table[species, species] + ff.scale


def _reads_a_pick(species, params):
    return params.pick[species] + _reads_an_offset(params)


def _reads_an_offset(p):
    return p.offset


def _sums(ff):
    return ff + 1  # a callee that uses it as something else


def test_a_namespace_passed_on_whole_has_the_attributes_its_callees_read_too() -> None:
    """jax-md's covalent-bond term passes `force_field` to the bond-order correction, which
    reads `bo131` off it: without the callee's reads the call stopped at that attribute."""
    fields = parameter_uses(_pair_term).namespaces["ff"]
    # by keyword and by position, and two calls down; `_sums` adds nothing, and takes
    # nothing away from what the others read
    assert list(fields) == ["scale", "table", "pick", "offset"]
    assert fields["table"].rank == 2 and fields["pick"].rank == 1 and fields["offset"].rank == 0


def test_a_tensor_attribute_a_method_a_nested_read_arithmetic_or_a_subscript_is_no_namespace() -> (
    None
):
    assert parameter_uses(_not_namespaces).namespaces == {}


def test_a_part_of_a_parameter_that_indexes_makes_it_an_index_of_its_rank_and_masks_are_bools() -> (
    None
):
    uses = parameter_uses(_force_field_term)
    assert uses.indices == {"triplets", "species"}  # via `center`, and `species[center]`
    assert uses.ranks["triplets"] == 2 and uses.masks == {"pair_mask"}
