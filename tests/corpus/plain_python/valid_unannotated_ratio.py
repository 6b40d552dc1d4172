# covers: unguarded-domain
def ratio(a, b):
    return a / b


def speedup(baseline_time, new_time):
    return baseline_time / new_time - 1.0


def geometric_mean(values):
    prod = 1.0
    for v in values:
        prod *= v
    return prod ** (1.0 / len(values))
