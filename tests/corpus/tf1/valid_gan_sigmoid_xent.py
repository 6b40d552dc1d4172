# covers: log-sigmoid, bce-sigmoid
import tensorflow.compat.v1 as tf


def gan_losses(d_real_logits, d_fake_logits):
    d_loss_real = tf.nn.sigmoid_cross_entropy_with_logits(
        logits=d_real_logits, labels=tf.ones_like(d_real_logits))
    d_loss_fake = tf.nn.sigmoid_cross_entropy_with_logits(
        logits=d_fake_logits, labels=tf.zeros_like(d_fake_logits))
    g_loss = tf.nn.sigmoid_cross_entropy_with_logits(
        logits=d_fake_logits, labels=tf.ones_like(d_fake_logits))
    return tf.reduce_mean(d_loss_real + d_loss_fake), tf.reduce_mean(g_loss)
