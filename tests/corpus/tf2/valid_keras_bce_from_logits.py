# covers: bce-sigmoid
import tensorflow as tf


def train_step(model: tf.keras.Model, optimizer, x, y):
    with tf.GradientTape() as tape:
        z = model(x, training=True)
        loss = tf.reduce_mean(tf.keras.losses.binary_crossentropy(y, z, from_logits=True))
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    return loss


bce = tf.keras.losses.BinaryCrossentropy(from_logits=True)
