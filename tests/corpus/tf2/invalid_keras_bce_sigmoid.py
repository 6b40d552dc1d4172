import tensorflow as tf


class ClickModel(tf.keras.Model):
    def __init__(self):
        super().__init__()
        self.hidden = tf.keras.layers.Dense(64, activation="relu")
        self.out = tf.keras.layers.Dense(1)

    def call(self, inputs):
        return self.out(self.hidden(inputs))


def train_step(model: ClickModel, optimizer, x, y):
    with tf.GradientTape() as tape:
        z = model(x, training=True)
        loss = tf.reduce_mean(tf.keras.losses.binary_crossentropy(y, tf.sigmoid(z)))  # expect: binary_cross_entropy/bce-sigmoid
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    return loss
