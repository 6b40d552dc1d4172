# covers: unguarded-domain
from keras import ops


def contrastive_loss(y_true, emb_a, emb_b, margin: float = 1.0):
    dist = ops.sqrt(ops.sum(ops.square(emb_a - emb_b), axis=-1) + 1e-9)
    pos = y_true * ops.square(dist)
    neg = (1.0 - y_true) * ops.square(ops.maximum(margin - dist, 0.0))
    return ops.mean(pos + neg)
