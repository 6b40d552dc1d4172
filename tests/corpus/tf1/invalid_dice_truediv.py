import tensorflow.compat.v1 as tf


def soft_dice_loss(y_true, y_pred):
    """Dice loss; an empty mask with an empty prediction gives 0 / 0."""
    intersection = tf.reduce_sum(y_true * y_pred, axis=[1, 2])
    denom = tf.reduce_sum(y_true, axis=[1, 2]) + tf.reduce_sum(y_pred, axis=[1, 2])
    dice = tf.truediv(2.0 * intersection, denom)  # expect: div/unguarded-domain
    return 1.0 - tf.reduce_mean(dice)
