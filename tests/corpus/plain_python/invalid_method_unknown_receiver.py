def log_scale(x):
    """x.log() with no arguments has the tensor signature: checked."""
    return x.log()  # expect: log/unguarded-domain


def inv(x):
    return x.reciprocal()  # expect: reciprocal/unguarded-domain
