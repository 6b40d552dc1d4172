import tensorflow as tf

tf.keras.mixed_precision.set_global_policy("mixed_float16")


class RMSNorm(tf.keras.layers.Layer):
    def __init__(self, epsilon: float = 1e-8, **kwargs: object) -> None:
        super().__init__(**kwargs)
        self.epsilon = epsilon

    def call(self, x: tf.Tensor) -> tf.Tensor:
        mean_square = tf.reduce_mean(tf.square(x), axis=-1, keepdims=True)
        return x * tf.math.rsqrt(mean_square + self.epsilon)  # expect: rsqrt/eps-underflow-fp16
