import tensorflow.compat.v1 as tf

tf.disable_v2_behavior()

labels = tf.placeholder(tf.float32, [None, 5])
logits = tf.placeholder(tf.float32, [None, 5])
probs = tf.nn.sigmoid(logits)
tf.clip_by_value(probs, 1e-6, 1.0 - 1e-6)  # expect: clamp/discarded-guard
loss = -tf.reduce_mean(labels * tf.log(probs))  # expect: log/log-sigmoid
