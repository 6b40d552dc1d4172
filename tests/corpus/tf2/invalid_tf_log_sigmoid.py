import tensorflow as tf


def bpr_loss(pos_scores: tf.Tensor, neg_scores: tf.Tensor) -> tf.Tensor:
    return -tf.reduce_mean(tf.math.log(tf.sigmoid(pos_scores - neg_scores)))  # expect: log/log-sigmoid


def gan_generator_loss(fake_logits: tf.Tensor) -> tf.Tensor:
    return tf.reduce_mean(tf.math.log(1.0 - tf.sigmoid(fake_logits)))  # expect: log/log-sigmoid
