import tensorflow.compat.v1 as tf


def gan_losses(d_real_logits, d_fake_logits):
    """DCGAN-style losses written on probabilities."""
    d_loss = -tf.reduce_mean(tf.log(tf.sigmoid(d_real_logits)) + tf.log(1.0 - tf.sigmoid(d_fake_logits)))  # expect: log/log-sigmoid
    g_loss = -tf.reduce_mean(tf.log(tf.sigmoid(d_fake_logits)))  # expect: log/log-sigmoid
    return d_loss, g_loss
