"""TF1 skip-gram word2vec with NCE loss and cosine nearest-neighbour evaluation (module level)."""
import math

import numpy as np
import tensorflow.compat.v1 as tf

tf.disable_v2_behavior()

vocabulary_size = 50000
embedding_size = 128
num_sampled = 64
valid_examples = np.random.choice(100, 16, replace=False)

train_inputs = tf.placeholder(tf.int32, shape=[None])
train_labels = tf.placeholder(tf.int32, shape=[None, 1])
valid_dataset = tf.constant(valid_examples, dtype=tf.int32)

embeddings = tf.Variable(tf.random_uniform([vocabulary_size, embedding_size], -1.0, 1.0))
embed = tf.nn.embedding_lookup(embeddings, train_inputs)
nce_weights = tf.Variable(
    tf.truncated_normal([vocabulary_size, embedding_size], stddev=1.0 / math.sqrt(embedding_size)))
nce_biases = tf.Variable(tf.zeros([vocabulary_size]))

loss = tf.reduce_mean(
    tf.nn.nce_loss(weights=nce_weights, biases=nce_biases, labels=train_labels, inputs=embed,
                   num_sampled=num_sampled, num_classes=vocabulary_size))
optimizer = tf.train.GradientDescentOptimizer(1.0).minimize(loss)

norm = tf.sqrt(tf.reduce_sum(tf.square(embeddings), 1, keep_dims=True))  # expect: sqrt/unguarded-domain
normalized_embeddings = embeddings / norm  # expect: div/manual-normalize
valid_embeddings = tf.nn.embedding_lookup(normalized_embeddings, valid_dataset)
similarity = tf.matmul(valid_embeddings, normalized_embeddings, transpose_b=True)

if __name__ == "__main__":
    with tf.Session() as session:
        tf.global_variables_initializer().run()
        for step in range(1000):
            inputs = np.random.randint(0, vocabulary_size, 128)
            labels = np.random.randint(0, vocabulary_size, (128, 1))
            _, loss_val = session.run([optimizer, loss], feed_dict={train_inputs: inputs, train_labels: labels})
        sim = similarity.eval()
        nearest = (-sim[0, :]).argsort()[1:9]
        print("nearest to word 0:", nearest)
