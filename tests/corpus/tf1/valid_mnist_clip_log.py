# covers: log-softmax, unguarded-domain
import tensorflow.compat.v1 as tf


def cnn_loss(h_fc1_drop, W_fc2, b_fc2, y_):
    y_conv = tf.nn.softmax(tf.matmul(h_fc1_drop, W_fc2) + b_fc2)
    cross_entropy = -tf.reduce_sum(y_ * tf.log(tf.clip_by_value(y_conv, 1e-10, 1.0)))
    return cross_entropy, y_conv
