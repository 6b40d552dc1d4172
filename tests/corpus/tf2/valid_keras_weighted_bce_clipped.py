# covers: unguarded-domain
from tensorflow.keras import backend as K


def weighted_binary_crossentropy(pos_weight: float):
    def loss(y_true, y_pred):
        y_pred = K.clip(y_pred, 1e-6, 1.0 - 1e-6)
        pos = pos_weight * y_true * K.log(y_pred)
        neg = (1.0 - y_true) * K.log(1.0 - y_pred)
        return -K.mean(pos + neg, axis=-1)

    return loss
