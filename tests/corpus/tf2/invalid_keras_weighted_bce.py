from tensorflow.keras import backend as K


def weighted_binary_crossentropy(pos_weight: float):
    """Custom Keras loss for imbalanced segmentation masks."""

    def loss(y_true, y_pred):
        pos = pos_weight * y_true * K.log(y_pred)  # expect: log/unguarded-domain
        neg = (1.0 - y_true) * K.log(1.0 - y_pred)  # expect: log/unguarded-domain
        return -K.mean(pos + neg, axis=-1)

    return loss
