"""Geospatial and pose utilities in TF2: haversine distance and quaternion geodesic angle."""
import math

import tensorflow as tf

EARTH_RADIUS_KM = 6371.0


def to_radians(deg):
    return deg * (math.pi / 180.0)


def haversine_km(lat1, lon1, lat2, lon2):
    phi1, phi2 = to_radians(lat1), to_radians(lat2)
    dphi = to_radians(lat2 - lat1)
    dlmb = to_radians(lon2 - lon1)
    a = tf.sin(dphi / 2.0) ** 2 + tf.cos(phi1) * tf.cos(phi2) * tf.sin(dlmb / 2.0) ** 2
    c = 2.0 * tf.asin(tf.sqrt(a))  # expect: asin/unguarded-domain, sqrt/unguarded-domain
    return EARTH_RADIUS_KM * c


def quaternion_angle(q1, q2):
    q1 = tf.math.l2_normalize(q1, axis=-1)
    q2 = tf.math.l2_normalize(q2, axis=-1)
    dot = tf.abs(tf.reduce_sum(q1 * q2, axis=-1))
    dot = tf.clip_by_value(dot, -1.0, 1.0)
    return 2.0 * tf.acos(dot)  # expect: acos


def trajectory_length_km(lats, lons):
    legs = haversine_km(lats[:-1], lons[:-1], lats[1:], lons[1:])
    return tf.reduce_sum(legs)


def pose_error(q_pred, q_true, t_pred, t_true):
    rot_deg = quaternion_angle(q_pred, q_true) * (180.0 / math.pi)
    trans = tf.norm(t_pred - t_true, axis=-1)
    return tf.reduce_mean(rot_deg), tf.reduce_mean(trans)
