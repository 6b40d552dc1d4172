# covers: unguarded-domain
"""Experiment tracker: a Logger with its own .log method, perplexity from plain floats, throughput."""
import math
import time


class Logger:
    def __init__(self):
        self.rows = []

    def log(self, key, value, step=None):
        self.rows.append((key, value, step))

    def last(self, key):
        for k, v, _ in reversed(self.rows):
            if k == key:
                return v
        return None


class Tracker:
    def __init__(self, logger: Logger):
        self.logger = logger
        self.token_losses = []
        self.tokens = 0
        self.t0 = time.perf_counter()

    def add(self, loss_sum: float, n_tokens: int):
        self.token_losses.append(float(loss_sum))
        self.tokens += int(n_tokens)

    def flush(self, step: int):
        if self.tokens == 0:
            return None
        mean_nll = sum(self.token_losses) / self.tokens
        ppl = math.exp(min(mean_nll, 50.0))
        self.logger.log("nll", mean_nll, step)
        self.logger.log("ppl", ppl, step)
        self.logger.log("log_ppl", math.log(ppl), step)
        elapsed = time.perf_counter() - self.t0
        self.logger.log("tokens_per_s", self.tokens / max(elapsed, 1e-9), step)
        self.token_losses.clear()
        self.tokens = 0
        return ppl
