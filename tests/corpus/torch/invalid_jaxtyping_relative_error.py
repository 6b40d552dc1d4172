from jaxtyping import Float
from torch import Tensor


def relative_error(pred: Float[Tensor, "b d"], target: Float[Tensor, "b d"]) -> Float[Tensor, "b"]:
    return ((pred - target).abs() / target.abs()).mean(dim=-1)  # expect: div/unguarded-domain


def inverse_scale(scale: Float[Tensor, "b"]) -> Float[Tensor, "b"]:
    return 1.0 / scale  # expect: div/unguarded-domain
