import tensorflow.compat.v1 as tf


def magnitude(stft):
    """Magnitude of a complex STFT stored as (real, imag) channels."""
    re, im = stft[..., 0], stft[..., 1]
    return tf.pow(tf.square(re) + tf.square(im), 0.5)  # expect: pow/unguarded-domain
