# covers: unguarded-domain
import math

import tensorflow as tf


def log_power_spectrum(power: tf.Tensor) -> tf.Tensor:
    power = tf.maximum(power, 1e-10)
    return 10.0 * tf.math.log(power) / math.log(10.0)
