from keras import ops


def contrastive_loss(y_true, emb_a, emb_b, margin: float = 1.0):
    """Siamese contrastive loss written with Keras 3 ops."""
    dist = ops.sqrt(ops.sum(ops.square(emb_a - emb_b), axis=-1))  # expect: sqrt/unguarded-domain
    pos = y_true * ops.square(dist)
    neg = (1.0 - y_true) * ops.square(ops.maximum(margin - dist, 0.0))
    return ops.mean(pos + neg)
