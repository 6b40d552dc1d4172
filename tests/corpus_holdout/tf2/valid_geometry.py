# covers: unguarded-domain
"""Safe geometry in TF2: haversine with clipped radicands, rotation-matrix and quaternion angles."""
import math

import tensorflow as tf

EARTH_RADIUS_M = 6_371_000.0
DEG2RAD = math.pi / 180.0


def haversine_m(lat1, lon1, lat2, lon2):
    phi1 = lat1 * DEG2RAD
    phi2 = lat2 * DEG2RAD
    dphi = (lat2 - lat1) * DEG2RAD
    dlmb = (lon2 - lon1) * DEG2RAD
    a = tf.sin(dphi * 0.5) ** 2 + tf.cos(phi1) * tf.cos(phi2) * tf.sin(dlmb * 0.5) ** 2
    a = tf.clip_by_value(a, 1e-12, 1.0)
    root = tf.clip_by_value(tf.sqrt(a), 0.0, 1.0 - 1e-6)
    return EARTH_RADIUS_M * 2.0 * tf.asin(root)


def rotation_angle(R):
    cos = (tf.linalg.trace(R) - 1.0) / 2.0
    cos = tf.clip_by_value(cos, -1.0 + 1e-6, 1.0 - 1e-6)
    return tf.acos(cos)


def quaternion_geodesic(q1, q2):
    q1 = tf.math.l2_normalize(q1, axis=-1)
    q2 = tf.math.l2_normalize(q2, axis=-1)
    dot = tf.reduce_sum(q1 * q2, axis=-1)
    dot = tf.clip_by_value(tf.abs(dot), 0.0, 1.0 - 1e-6)
    return 2.0 * tf.acos(dot)


def pose_error_deg(R_pred, R_true):
    R_rel = tf.matmul(R_pred, R_true, transpose_a=True)
    return rotation_angle(R_rel) * (180.0 / math.pi)
