# covers: unguarded-domain
import tensorflow.compat.v1 as tf


def magnitude(stft):
    re, im = stft[..., 0], stft[..., 1]
    return tf.pow(tf.square(re) + tf.square(im) + 1e-9, 0.5)
