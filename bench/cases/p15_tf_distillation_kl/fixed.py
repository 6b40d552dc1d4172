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
    # work with log-probabilities: p_teacher / p_student overflows (or is 0 / 0) once a
    # probability underflows, and p * log(p / q) turns that into inf or NaN
    log_p_teacher = tf.nn.log_softmax(teacher_logits / temperature)
    log_p_student = tf.nn.log_softmax(student_logits / temperature)
    kl = tf.reduce_sum(tf.exp(log_p_teacher) * (log_p_teacher - log_p_student), axis=-1)
    ce = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=student_logits)
    soft = (temperature**2) * tf.reduce_mean(kl)
    return alpha * tf.reduce_mean(ce) + (1.0 - alpha) * soft
