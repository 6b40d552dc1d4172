"""Knowledge distillation loss (Hinton et al., 2015): soft-target KL plus hard-label CE, TF2."""

import tensorflow as tf


def distillation_loss(
    student_logits: tf.Tensor,
    teacher_logits: tf.Tensor,
    labels: tf.Tensor,
    temperature: float = 2.0,
    alpha: float = 0.5,
) -> tf.Tensor:
    """student_logits, teacher_logits: [batch, classes]; labels: [batch] class ids."""
    p_teacher = tf.nn.softmax(teacher_logits / temperature)
    p_student = tf.nn.softmax(student_logits / temperature)
    kl = tf.reduce_sum(p_teacher * tf.math.log(p_teacher / p_student), axis=-1)  # numcheck-bug: log
    ce = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=student_logits)
    soft = (temperature**2) * tf.reduce_mean(kl)
    return alpha * tf.reduce_mean(ce) + (1.0 - alpha) * soft
