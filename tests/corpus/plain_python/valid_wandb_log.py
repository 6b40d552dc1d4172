# covers: unguarded-domain
import math

import wandb


def log_metrics(step: int, loss: float, grad_norm: float) -> None:
    perplexity = math.exp(min(loss, 20.0))
    wandb.log({"loss": loss, "ppl": perplexity, "grad_norm": math.sqrt(grad_norm)}, step=step)
