def learning_rate(step: int, warmup: int, base_lr: float) -> float:
    return base_lr * min(1.0, step / warmup)
