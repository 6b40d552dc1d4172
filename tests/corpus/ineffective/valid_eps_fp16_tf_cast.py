# covers: eps-underflow-fp16
import tensorflow as tf

tf.keras.mixed_precision.set_global_policy("mixed_float16")


class RMSNorm(tf.keras.layers.Layer):
    """Under the mixed_float16 policy x arrives in float16: the norm is taken in float32."""

    def __init__(self, epsilon: float = 1e-8, **kwargs: object) -> None:
        super().__init__(**kwargs)
        self.epsilon = epsilon

    def call(self, x: tf.Tensor) -> tf.Tensor:
        x32 = tf.cast(x, tf.float32)
        mean_square = tf.reduce_mean(tf.square(x32), axis=-1, keepdims=True)
        return tf.cast(x32 * tf.math.rsqrt(mean_square + self.epsilon), x.dtype)
