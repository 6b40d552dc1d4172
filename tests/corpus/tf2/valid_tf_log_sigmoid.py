# covers: log-sigmoid
import tensorflow as tf


def bpr_loss(pos_scores: tf.Tensor, neg_scores: tf.Tensor) -> tf.Tensor:
    return -tf.reduce_mean(tf.math.log_sigmoid(pos_scores - neg_scores))


def gan_generator_loss(fake_logits: tf.Tensor) -> tf.Tensor:
    return -tf.reduce_mean(tf.nn.softplus(fake_logits))
