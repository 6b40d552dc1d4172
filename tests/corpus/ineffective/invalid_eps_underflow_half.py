import torch
from torch import Tensor


def normalized_residual(pred: Tensor, target: Tensor) -> Tensor:
    pred = pred.half()
    target = target.half()
    return (pred - target) / (target.abs() + 1e-10)  # expect: div/eps-underflow-fp16
