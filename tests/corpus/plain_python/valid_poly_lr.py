# covers: unguarded-domain
def poly_lr(base_lr: float, step: int, max_steps: int, power: float = 0.9) -> float:
    return base_lr * (1 - step / max_steps) ** power


def inverse_sqrt_lr(base_lr: float, step: int, warmup: int) -> float:
    step = max(step, 1)
    return base_lr * min(step ** -0.5, step * warmup ** -1.5)
