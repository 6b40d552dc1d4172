# covers: manual-normalize, unguarded-domain
"""TF1 skip-gram with sampled softmax; evaluation uses l2_normalize and a guarded cosine."""
import math

import numpy as np
import tensorflow.compat.v1 as tf

tf.disable_v2_behavior()

VOCAB = 20000
DIM = 200

center = tf.placeholder(tf.int32, [None])
context = tf.placeholder(tf.int32, [None, 1])
query_a = tf.placeholder(tf.int32, [None])
query_b = tf.placeholder(tf.int32, [None])

emb = tf.get_variable("emb", [VOCAB, DIM], initializer=tf.random_uniform_initializer(-0.5 / DIM, 0.5 / DIM))
out_w = tf.get_variable("out_w", [VOCAB, DIM], initializer=tf.truncated_normal_initializer(stddev=1.0 / math.sqrt(DIM)))
out_b = tf.get_variable("out_b", [VOCAB], initializer=tf.zeros_initializer())

loss = tf.reduce_mean(tf.nn.sampled_softmax_loss(out_w, out_b, context, tf.nn.embedding_lookup(emb, center), 64, VOCAB))
train_op = tf.train.AdagradOptimizer(0.5).minimize(loss)

unit_emb = tf.nn.l2_normalize(emb, 1, epsilon=1e-12)
all_sims = tf.matmul(tf.nn.embedding_lookup(unit_emb, query_a), unit_emb, transpose_b=True)


def cosine(a, b):
    dot = tf.reduce_sum(a * b, axis=1)
    denom = tf.maximum(tf.norm(a, axis=1) * tf.norm(b, axis=1), 1e-8)
    return dot / denom


pair_sim = cosine(tf.nn.embedding_lookup(emb, query_a), tf.nn.embedding_lookup(emb, query_b))

if __name__ == "__main__":
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        ids = np.arange(10)
        print(sess.run(pair_sim, feed_dict={query_a: ids, query_b: ids[::-1]}))
