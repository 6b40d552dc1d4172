import numpy as np


def mutual_information(joint: np.ndarray) -> float:
    """Mutual information (bits) from a co-occurrence histogram of cluster assignments."""
    joint = joint / joint.sum()  # expect: div/unguarded-domain
    px = joint.sum(axis=1, keepdims=True)
    py = joint.sum(axis=0, keepdims=True)
    ratio = joint / (px * py)  # expect: div/unguarded-domain
    return float(np.sum(joint * np.log2(ratio)))  # expect: log2/unguarded-domain
