# covers: unguarded-domain
"""TF1 language-model graph: guarded token normalisation, bounded perplexity, inverse-sqrt schedule."""
import tensorflow.compat.v1 as tf

tf.disable_v2_behavior()

VOCAB = 16000
HIDDEN = 512
WARMUP = 4000

tokens = tf.placeholder(tf.int32, [None, None])
lengths = tf.placeholder(tf.int32, [None])

embedding = tf.get_variable("embedding", [VOCAB, HIDDEN])
cell = tf.nn.rnn_cell.GRUCell(HIDDEN)
outputs, _ = tf.nn.dynamic_rnn(cell, tf.nn.embedding_lookup(embedding, tokens[:, :-1]), dtype=tf.float32)
logits = tf.layers.dense(outputs, VOCAB)

mask = tf.sequence_mask(lengths - 1, tf.shape(tokens)[1] - 1, dtype=tf.float32)
xent = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=tokens[:, 1:], logits=logits)
token_count = tf.maximum(tf.reduce_sum(mask), 1.0)
loss = tf.reduce_sum(xent * mask) / token_count
sentence_len = tf.maximum(tf.reduce_sum(mask, axis=1), 1.0)
per_sentence = tf.div(tf.reduce_sum(xent * mask, axis=1), sentence_len)
perplexity = tf.exp(tf.clip_by_value(loss, 0.0, 30.0))

global_step = tf.train.get_or_create_global_step()
step = tf.maximum(tf.cast(global_step, tf.float32), 1.0)
learning_rate = HIDDEN ** -0.5 * tf.minimum(tf.rsqrt(step), step * WARMUP ** -1.5)
optimizer = tf.train.AdamOptimizer(learning_rate, beta1=0.9, beta2=0.98)
train_op = optimizer.minimize(loss, global_step=global_step)

tf.summary.scalar("loss", loss)
tf.summary.scalar("perplexity", perplexity)
tf.summary.scalar("learning_rate", learning_rate)
tf.summary.histogram("sentence_loss", per_sentence)
summaries = tf.summary.merge_all()
