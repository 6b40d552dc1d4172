# covers: log-softmax
import tensorflow as tf


def cross_entropy(model: tf.keras.Model, x, labels):
    logits = model(x)
    losses = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)
    return tf.reduce_mean(losses)


def distillation_loss(student_logits: tf.Tensor, teacher_logits: tf.Tensor) -> tf.Tensor:
    teacher = tf.nn.softmax(teacher_logits, axis=-1)
    log_student = tf.nn.log_softmax(student_logits, axis=-1)
    return -tf.reduce_mean(tf.reduce_sum(teacher * log_student, axis=-1))
