# covers: unguarded-domain
"""Training utilities on plain numbers: AverageMeter, cosine LR, class weights, logger.log calls."""
import logging
import math
import time
from collections import Counter

logger = logging.getLogger(__name__)


class AverageMeter:
    def __init__(self, name: str):
        self.name = name
        self.reset()

    def reset(self):
        self.val = 0.0
        self.sum = 0.0
        self.count = 0
        self.avg = 0.0

    def update(self, val, n=1):
        self.val = val
        self.sum += val * n
        self.count += n
        self.avg = self.sum / self.count


def cosine_lr(step, total_steps, base_lr, min_lr=0.0, warmup=0):
    if step < warmup:
        return base_lr * (step + 1) / warmup
    progress = (step - warmup) / max(1, total_steps - warmup)
    return min_lr + 0.5 * (base_lr - min_lr) * (1 + math.cos(math.pi * progress))


def class_weights(labels):
    counts = Counter(labels)
    total = sum(counts.values())
    return {c: total / (len(counts) * n) for c, n in counts.items()}


def log_epoch(epoch, meters, start_time):
    elapsed = time.time() - start_time
    rate = meters["loss"].count / elapsed
    logger.log(logging.INFO, "epoch %d loss %.4f (%.1f samples/s)", epoch, meters["loss"].avg, rate)
    logger.log(logging.DEBUG, "log10 lr = %.2f", math.log10(meters["lr"].avg))
    return rate


def entropy_bits(counts):
    total = sum(counts)
    return -sum((c / total) * math.log2(c / total) for c in counts if c)
