import tensorflow as tf


def distillation_loss(student_logits: tf.Tensor, teacher_logits: tf.Tensor) -> tf.Tensor:
    teacher = tf.nn.softmax(teacher_logits, axis=-1)
    log_student = tf.math.log(tf.nn.softmax(student_logits, axis=-1))  # expect: log/log-softmax
    return -tf.reduce_mean(tf.reduce_sum(teacher * log_student, axis=-1))
