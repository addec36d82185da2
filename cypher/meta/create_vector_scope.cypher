// A group's own vector index (cosine) over the messages that carry its scope label.
// __KEY__ is replaced by graphmem.store.scope with the group's digest (digits only) before it runs.
// Parameters: $dimensions (int, the embedder's dimension, e.g. 384). Returns nothing.
CREATE VECTOR INDEX message_embedding___KEY__ IF NOT EXISTS
FOR (m:GroupScope___KEY__) ON m.embedding
OPTIONS {indexConfig: {`vector.dimensions`: $dimensions, `vector.similarity_function`: 'cosine'}}
