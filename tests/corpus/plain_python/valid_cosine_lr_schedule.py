# covers: unguarded-domain
import math


def cosine_lr(step: int, total_steps: int, base_lr: float, warmup: int = 500) -> float:
    if step < warmup:
        return base_lr * step / warmup
    progress = (step - warmup) / (total_steps - warmup)
    return 0.5 * base_lr * (1 + math.cos(math.pi * progress))


def log_uniform_lr(low: float, high: float, u: float) -> float:
    return math.exp(math.log(low) + u * (math.log(high) - math.log(low)))
