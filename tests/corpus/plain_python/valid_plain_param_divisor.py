# covers: unguarded-domain
def apply_temperature(logits, temperature):
    """A plain helper: neither argument is known to be a tensor, so nothing is checked."""
    return logits / temperature


def mean_of(values, n):
    return sum(values) / n
